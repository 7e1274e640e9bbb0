// Package splat finds kernel error reports in guest text: WARNINGs, BUGs,
// lockups, stalls and the like on the console (Find, FindLines, Starts for
// a console read as it streams), kmemleak's unreferenced objects
// (ParseKmemleak) and where a stuck task sleeps (StackFrame). It returns
// results.Splat, titled the same way for every occurrence of a bug.
//
//	for _, s := range splat.Find(consoleLog) {
//		fmt.Println(s.Type, s.Title, s.Where())
//	}
package splat

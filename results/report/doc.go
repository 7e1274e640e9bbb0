// Package report writes a run's results for people and for CI: the run
// folder's junit.xml, result.ktap, kcidb.json and report.html (Save,
// WriteRun), the HTML pages of comparisons and perf checks, one junit.xml
// for merged CI shards (Merge) and the list of a results folder.
//
//	err := report.Save(dir, r) // result.json, junit.xml and the reports
package report

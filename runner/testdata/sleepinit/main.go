// Command sleepinit is an /init that starts no agent: a kernel that boots
// fine but never answers, for TestSilentBootEvidence.
package main

import (
	"fmt"
	"time"
)

func main() {
	fmt.Println("sleepinit: no agent here")
	for {
		time.Sleep(time.Hour)
	}
}

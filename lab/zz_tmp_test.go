package main

import (
	"os"
	"testing"
)

func TestTmpReport(t *testing.T) {
	args := []string{"report"}
	args = append(args, os.Getenv("TMPDIRS"))
	c := newReportCmd(nil)
	c.SetArgs(args[1:])
	c.SetOut(os.Stdout)
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	l := newResultsCmd(nil)
	l.SetArgs([]string{"list", "-o", os.Getenv("LISTDIR"), "-n", "30"})
	l.SetOut(os.Stdout)
	if err := l.Execute(); err != nil {
		t.Fatal(err)
	}
}

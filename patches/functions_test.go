package patches

import (
	"reflect"
	"testing"
)

const hunkDiff = `Subject: x
---
diff --git a/net/core/dev.c b/net/core/dev.c
--- a/net/core/dev.c
+++ b/net/core/dev.c
@@ -10,6 +10,7 @@ static int napi_thread_wait(struct napi_struct *napi)
 	while (!kthread_should_stop()) {
-		schedule();
+		if (!schedule_timeout(1))
+			continue;
 		woken = true;
 	}
@@ -40,3 +41,4 @@
 }
 
+static DEFINE_PER_CPU(bool, flag);
diff --git a/Documentation/x.rst b/Documentation/x.rst
--- a/Documentation/x.rst
+++ b/Documentation/x.rst
@@ -1,1 +1,2 @@
+text
-- 
2.39.5
`

func TestHunks(t *testing.T) {
	p := Patch{Strip: 1, Diff: []byte(hunkDiff)}
	got := p.Hunks()
	if len(got) != 2 {
		t.Fatalf("%d hunks, want 2 (the .rst one left out): %+v", len(got), got)
	}
	h := got[0]
	want := DiffHunk{File: "net/core/dev.c", NewStart: 10, Context: "napi_thread_wait",
		Lines:   []string{"\twhile (!kthread_should_stop()) {", "\t\tif (!schedule_timeout(1))", "\t\t\tcontinue;", "\t\twoken = true;", "\t}"},
		Added:   []int{1, 2},
		Removed: []int{0}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("hunk 1:\n got %+v\nwant %+v", h, want)
	}
	if got[1].Context != "" || !reflect.DeepEqual(got[1].Added, []int{2}) {
		t.Errorf("hunk 2: %+v", got[1])
	}
}

func TestDefName(t *testing.T) {
	for line, want := range map[string]string{
		"static int napi_thread_wait(struct napi_struct *napi)":                "napi_thread_wait",
		"static __latent_entropy void net_rx_action(struct softirq_action *h)": "net_rx_action",
		"void *foo(int a,":                      "foo",
		"static DEFINE_PER_CPU(bool, flag);":    "",
		"EXPORT_SYMBOL(napi_enable);":           "",
		"#define X(a) (a)":                      "",
		"struct napi_struct {":                  "",
		"\tif (x) {":                            "",
		"if (x)":                                "",
		"static const struct ethtool_ops o = {": "",
	} {
		if got := DefName(line); got != want {
			t.Errorf("DefName(%q) = %q, want %q", line, got, want)
		}
	}
}

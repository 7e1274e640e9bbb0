package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

type pipe struct {
	io.Reader
	io.Writer
}

func TestRoundTripSkipsGarbage(t *testing.T) {
	var out bytes.Buffer
	c := NewConn(pipe{Writer: &out})
	if err := c.Send(&Message{ID: 7, Op: OpWrite, Args: Encode(File{Path: "/sys/class/net/vrx/threaded", Value: "1"})}); err != nil {
		t.Fatal(err)
	}
	// What a port may carry before the agent starts, then the real line.
	in := "\x00\x00garbage\n{not json\n" + out.String()
	r := NewConn(pipe{Reader: strings.NewReader(in)})
	m, err := r.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != 7 || m.Op != OpWrite || !strings.Contains(string(m.Args), `"value":"1"`) {
		t.Errorf("got %+v args %s", m, m.Args)
	}
	if _, err := r.Recv(); err != io.EOF {
		t.Errorf("after the last line: %v, want EOF", err)
	}
}

// TestQdiscArgs checks the qdisc op's arguments survive a line of the
// protocol, under the names both ends agree on.
func TestQdiscArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Qdisc
		json string
	}{
		{"replace with a limit", Qdisc{Dev: "vtx", Netns: "a", Op: QdiscReplace, Kind: "pfifo", Limit: 1000},
			`{"dev":"vtx","netns":"a","op":"replace","kind":"pfifo","limit":1000}`},
		{"root namespace", Qdisc{Dev: "eth0", Op: QdiscAdd, Kind: "mq"}, `{"dev":"eth0","op":"add","kind":"mq"}`},
		{"delete", Qdisc{Dev: "vtx", Netns: "a", Op: QdiscDelete}, `{"dev":"vtx","netns":"a","op":"delete"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := NewConn(pipe{Writer: &out}).Send(&Message{ID: 1, Op: OpQdisc, Args: Encode(tc.q)}); err != nil {
				t.Fatal(err)
			}
			m, err := NewConn(pipe{Reader: &out}).Recv()
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Args) != tc.json {
				t.Errorf("args %s, want %s", m.Args, tc.json)
			}
			var got Qdisc
			if err := json.Unmarshal(m.Args, &got); err != nil || got != tc.q || m.Op != OpQdisc {
				t.Errorf("got %s %+v (%v), want %+v", m.Op, got, err, tc.q)
			}
		})
	}
}

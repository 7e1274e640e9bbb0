package wire

import (
	"bytes"
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

package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
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

// TestRecvBounded: lines over the cap are dropped without being kept whole
// and counted, garbage is counted, and an over-long answer fails its
// request instead of vanishing.
func TestRecvBounded(t *testing.T) {
	long := `{"event":"log","data":"` + strings.Repeat("x", 300) + "\"}\n"
	in := "garbage\n\n" + long + `{"id":12,"data":"` + strings.Repeat("y", 300) + "\"}\n" +
		strings.Repeat("z", 300) + "\n{bad json\n" + `{"id":3,"data":1}` + "\n"
	c := NewConn(pipe{Reader: strings.NewReader(in)})
	c.max = 100
	m, err := c.Recv()
	if err != nil || m.ID != 12 || !strings.Contains(m.Error, "the answer was dropped: a line over") {
		t.Fatalf("got %+v %v, want an error for request 12", m, err)
	}
	m, err = c.Recv()
	if err != nil || m.ID != 3 || string(m.Data) != "1" {
		t.Fatalf("got %+v %v, want answer 3", m, err)
	}
	if d := c.Dropped(); d != (Drops{Long: 3, Garbage: 2}) {
		t.Errorf("dropped %+v, want 3 long and 2 garbage", d)
	}
}

// TestSendDeadline: a peer that does not read makes Send give up when the
// context ends; a write cut inside a line breaks the stream for later sends.
func TestSendDeadline(t *testing.T) {
	host, guest := net.Pipe()
	defer host.Close()
	defer guest.Close()
	c := NewConn(host)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.SendContext(ctx, &Message{ID: 1, Op: OpHello}) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("send error %v, want the deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a send to a peer that does not read did not time out")
	}
	// Nothing was written: the stream is whole and the next send works.
	go io.Copy(io.Discard, guest)
	if err := c.SendContext(context.Background(), &Message{ID: 2, Op: OpHello}); err != nil {
		t.Errorf("send after a timeout with nothing written: %v", err)
	}
}

// TestLongAnswer: only a head that starts {"id":N, or {"id":N} names the
// request an over-long answer was for.
func TestLongAnswer(t *testing.T) {
	for _, tc := range []struct {
		head string
		id   int64 // 0: none
	}{
		{`{"id":12,"data":"yyyy`, 12},
		{`{"id":7}`, 7},
		{`{"id":123456789012345678,"d`, 123456789012345678},
		{`{"id":1234567890123456789,"`, 0}, // 19 digits
		{`{"id":012,"data"`, 0},
		{`{"id":0,"data"`, 0},
		{`{"id":12`, 0},
		{`{"id":-1,"data"`, 0},
		{`{"id":,"data"`, 0},
		{`{"event":"log","data"`, 0},
		{` {"id":12,"data"`, 0},
		{``, 0},
	} {
		m := longAnswer([]byte(tc.head))
		switch {
		case tc.id == 0 && m != nil:
			t.Errorf("longAnswer(%q) = request %d, want none", tc.head, m.ID)
		case tc.id != 0 && (m == nil || m.ID != tc.id):
			t.Errorf("longAnswer(%q) = %+v, want request %d", tc.head, m, tc.id)
		}
	}
}

package serve

import (
	"errors"
	"io"
	"testing"

	"github.com/aegis-mcp/aegis/internal/proxy"
)

var _ proxy.MessageReader = (*input)(nil)

// TestInput: a send returns once the relay has taken the message; the
// relay reads io.EOF once the input is closed, and a send then fails; a
// send still waiting when the relay ends fails, and so does a read.
func TestInput(t *testing.T) {
	in := newInput()
	sent := make(chan error, 1)
	go func() { sent <- in.send([]byte("one\n")) }()
	msg, err := in.ReadMessage()
	if string(msg) != "one\n" || err != nil {
		t.Fatalf("ReadMessage = %q, %v", msg, err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("send = %v", err)
	}

	// Read gives the messages as a stream.
	go func() { sent <- in.send([]byte("two\n")) }()
	buf := make([]byte, 2)
	var got []byte
	for len(got) < 4 {
		n, err := in.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "two\n" || <-sent != nil {
		t.Fatalf("Read gave %q", got)
	}

	in.close()
	if _, err := in.ReadMessage(); err != io.EOF {
		t.Fatalf("ReadMessage after close = %v, want io.EOF", err)
	}
	if err := in.send([]byte("late\n")); err == nil {
		t.Fatal("send after close succeeded")
	}
	in.close() // twice is fine

	in = newInput()
	go func() { sent <- in.send([]byte("never taken\n")) }()
	in.end()
	if err := <-sent; !errors.Is(err, errSessionEnded) {
		t.Fatalf("send waiting when the relay ended = %v, want errSessionEnded", err)
	}
	if _, err := in.ReadMessage(); !errors.Is(err, errSessionEnded) {
		t.Fatalf("ReadMessage after end = %v", err)
	}
	in.end()
}

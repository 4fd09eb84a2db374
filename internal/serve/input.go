package serve

import (
	"errors"
	"io"
	"sync"
)

// An input is what a session's relay reads: the client's messages, each
// handed over whole (proxy.MessageReader), so that the relay holds no
// read buffer for an idle session and copies no message. The channel is
// unbuffered: a sender waits until the relay takes its message, as it
// would on a pipe.
type input struct {
	msgs    chan []byte
	closed  chan struct{} // the client has said all it will: the relay reads io.EOF
	done    chan struct{} // the relay has ended: sends fail
	closing sync.Once
	ending  sync.Once
	pending []byte // what Read has not returned yet
}

// errSessionEnded is what a send to a session whose relay ended returns.
var errSessionEnded = errors.New("the session has ended")

func newInput() *input {
	return &input{msgs: make(chan []byte), closed: make(chan struct{}), done: make(chan struct{})}
}

// send hands msg, one line, to the relay, which takes it as its own;
// it waits until the relay does, or the input is closed or ended.
func (in *input) send(msg []byte) error {
	select {
	case <-in.closed:
		return io.ErrClosedPipe
	case <-in.done:
		return errSessionEnded
	default:
	}
	select {
	case in.msgs <- msg:
		return nil
	case <-in.closed:
		return io.ErrClosedPipe
	case <-in.done:
		return errSessionEnded
	}
}

// close ends the input as a client ends its stream: the relay reads
// io.EOF, and sends fail.
func (in *input) close() { in.closing.Do(func() { close(in.closed) }) }

// end tells a sender, and a read still waiting, that the relay has ended.
func (in *input) end() { in.ending.Do(func() { close(in.done) }) }

// ReadMessage implements proxy.MessageReader.
func (in *input) ReadMessage() ([]byte, error) {
	select {
	case msg := <-in.msgs:
		return msg, nil
	case <-in.closed:
		return nil, io.EOF
	case <-in.done:
		return nil, errSessionEnded
	}
}

// Read reads the messages as a stream, for a reader that does not take
// them whole; it is not to be mixed with ReadMessage.
func (in *input) Read(p []byte) (int, error) {
	if len(in.pending) == 0 {
		msg, err := in.ReadMessage()
		if err != nil {
			return 0, err
		}
		in.pending = msg
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

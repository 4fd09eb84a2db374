package main

import (
	"net"
	"runtime"
	"testing"
)

// TestConsoleListener: by default the console listens on an address of
// its own in 127.0.0.0/8 on Linux (a browser sends 127.0.0.1's cookies to
// every local server on it), on loopback in any case; --addr is taken as
// given.
func TestConsoleListener(t *testing.T) {
	ln, err := consoleListener("")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ip := ln.Addr().(*net.TCPAddr).IP
	if !ip.IsLoopback() {
		t.Fatalf("listens on %v, not loopback", ip)
	}
	if runtime.GOOS == "linux" && ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("listens on 127.0.0.1, whose cookies every local server receives")
	}
	ln2, err := consoleListener("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	if got := ln2.Addr().(*net.TCPAddr).IP; !got.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("--addr 127.0.0.1:0 listens on %v", got)
	}
}

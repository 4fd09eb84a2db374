//go:build !linux

package chain

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

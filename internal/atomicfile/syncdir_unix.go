//go:build unix

package atomicfile

import "os"

// SyncDir makes the entries of dir durable: a file created, renamed or
// removed in dir before SyncDir returns survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

//go:build !unix

package atomicfile

// SyncDir makes the entries of dir durable. Off Unix it does nothing:
// Windows cannot open a directory to sync it, and its file systems journal
// a rename as part of the rename itself.
func SyncDir(string) error { return nil }

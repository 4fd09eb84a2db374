// Package atomicfile owns replacing a file so that a reader, or a crash,
// sees either the old content or the new, never a mix or an empty file:
// the chain's keys, the pin store.
//
// [WriteFile] writes a temporary file in the target's directory, syncs it,
// renames it over the target and, on Unix, syncs the directory so that the
// rename itself survives a crash. Appending to a file and deciding who may
// write it are left to others (package chain, package filelock).
//
// # Example
//
//	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
//		return fmt.Errorf("saving pins: %w", err)
//	}
package atomicfile

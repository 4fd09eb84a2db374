package chain

import "github.com/aegis-mcp/aegis/internal/record"

// LastEntries returns the last n entries of the chain in dir, in order
// (all of them when n is 0 or less), reading only the segments that hold
// them: `aegis log` on a chain of millions of entries reads one segment,
// not the chain. It reads as [ScanFrom] does: a break in the segments it
// reads is an error; one in a segment before them is not seen.
func LastEntries(dir string, n int) ([]*record.Entry, error) {
	collect := func(from uint64) ([]*record.Entry, error) {
		var ring []*record.Entry
		err := ScanFrom(dir, from, func(e *record.Entry) error {
			c := *e
			ring = append(ring, &c)
			if n > 0 && len(ring) > n {
				ring = ring[1:]
			}
			return nil
		})
		return ring, err
	}
	starts, err := SegmentStarts(dir)
	if err != nil || n <= 0 || len(starts) < 2 {
		return collect(0)
	}
	last := starts[len(starts)-1]
	ring, err := collect(last)
	if err != nil || len(ring) >= n {
		return ring, err
	}
	// The last segment holds fewer: start at the latest segment whose
	// entries, with those of the segments up to the last, make up the rest.
	from := starts[0]
	for i := len(starts) - 2; i >= 0; i-- {
		if last-starts[i] >= uint64(n-len(ring)) {
			from = starts[i]
			break
		}
	}
	return collect(from)
}

package chain

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/record"
)

// A chain directory holds its entries in segment files, JSON Lines named by
// the seq of their first entry, so that listing the directory orders them:
//
//	chain-00000000000000000001.jsonl
//	chain-00000000000000131073.jsonl
//
// Each line is an entry, a checkpoint or an ack. A Log starts a new segment
// only after a checkpoint, so every segment but the last ends with one.

const (
	segPrefix = "chain-"
	segSuffix = ".jsonl"
	segDigits = 20
)

type segment struct {
	first uint64 // seq of its first entry, from the name
	name  string
	path  string
	// from is the offset a walk starts reading it at: 0, or, for
	// recovery, where its tail starts (tailStart). first is then the seq
	// of the entry there.
	from int64
}

func segmentName(first uint64) string {
	return fmt.Sprintf("%s%0*d%s", segPrefix, segDigits, first, segSuffix)
}

// listSegments returns the segments of dir in order. A file that looks like
// a segment but is not named exactly like one is an error: the chain would
// otherwise be read without it.
func listSegments(dir string) ([]segment, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("chain: listing segments: %w", err)
	}
	var segs []segment
	for _, de := range des {
		name := de.Name()
		if !strings.HasPrefix(name, segPrefix) || !strings.HasSuffix(name, segSuffix) {
			continue
		}
		digits := name[len(segPrefix) : len(name)-len(segSuffix)]
		first, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || len(digits) != segDigits || first == 0 || first > record.MaxSeq || !de.Type().IsRegular() {
			return nil, fmt.Errorf("chain: %s in %s is not a segment file (want %s, a regular file)", name, dir, segmentName(1))
		}
		segs = append(segs, segment{first: first, name: name, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(segs, func(a, b segment) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	return segs, nil
}

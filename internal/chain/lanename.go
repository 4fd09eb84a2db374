package chain

import (
	"path/filepath"
	"strconv"
	"strings"
)

// MaxLanes bounds the writers that record one server's chain at once: its
// lanes are numbered 1 to MaxLanes.
const MaxLanes = 64

// A Lane is one chain of a server's (lanes.go): its number and directory.
// Lane 0 is a chain named by its directory alone, outside any server's
// lanes (aegis's --chain DIR); it names its entries as lane 1 does.
type Lane struct {
	N   int
	Dir string
}

// EntryName names entry seq of the lane as aegis prints it: "17", or
// "17@2" in lane 2. [ParseEntryName] reads it back.
func (ln Lane) EntryName(seq uint64) string {
	if ln.N < 2 {
		return strconv.FormatUint(seq, 10)
	}
	return strconv.FormatUint(seq, 10) + "@" + strconv.Itoa(ln.N)
}

// LaneDir is the directory of lane n of server's chain under root:
// root/SERVER for lane 1, root/SERVER@N for a later one.
func LaneDir(root, server string, n int) string {
	if n < 2 {
		return filepath.Join(root, server)
	}
	return filepath.Join(root, server+"@"+strconv.Itoa(n))
}

// ParseLaneName reads the name of a lane's directory: "fs" is lane 1 of
// server fs, "fs@2" lane 2. Anything else is not a lane: a server part
// that [CheckServerName] refuses, or a lane number that is not 2 to
// [MaxLanes] written in decimal without a sign or leading zeros, so that
// one lane has one name ([LaneDir] writes it back).
func ParseLaneName(name string) (server string, n int, ok bool) {
	server, num, found := strings.Cut(name, "@")
	if CheckServerName(server) != nil {
		return "", 0, false
	}
	if !found {
		return server, 1, true
	}
	if n, ok = parseLaneNumber(num); !ok {
		return "", 0, false
	}
	return server, n, true
}

// parseLaneNumber reads a lane number as written after '@': 2 to MaxLanes,
// in decimal without a sign or leading zeros, so that one lane has one
// name.
func parseLaneNumber(s string) (int, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false // empty, signed, or a leading zero
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 2 && n <= MaxLanes
}

// ParseEntryName reads an entry's name as [Lane.EntryName] writes it: SEQ,
// an entry of lane 1, or SEQ@LANE. Seq 0 and lane 1 written out ("17@1")
// are not names.
func ParseEntryName(s string) (seq uint64, n int, ok bool) {
	num, ln, found := strings.Cut(s, "@")
	n = 1
	if found {
		if n, ok = parseLaneNumber(ln); !ok {
			return 0, 0, false
		}
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	return seq, n, err == nil && seq > 0
}

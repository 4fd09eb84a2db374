// Package envelope keeps the resolved input of each call (DESIGN.md R23):
// the arguments as forwarded, with secrets redacted, apart from the chain
// and with a retention of their own — for the incident that asks "an email
// went out: to whom?". The chain is publishable and carries only the
// decision axes; an envelope holds what the chain must not, and is linked
// to its chain entry by hash (the entry's `envelope` field).
//
// Envelopes are JSON Lines, one file per server and UTC day
// (DIR/2026-11-29.jsonl), so that retention deletes whole files. A record's
// hash is SHA-256("aegis.envelope.v1\x00" || the line without its newline);
// each record carries a random nonce, so the hash in a published chain
// reveals nothing of a low-entropy input (a recipient among a few).
//
// A record is written (one write(2) on a file opened O_APPEND) before the
// call's chain entry, so a crash of aegis loses no envelope of a recorded
// call; the file is not fsynced per record, so a power loss may lose the
// last moments' envelopes while their entries, fsynced, survive — `aegis
// envelope` then says the envelope is missing.
package envelope

import (
	"bufio"
	"bytes"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Version is the record format version.
const Version = 1

const hashDomain = "aegis.envelope.v1\x00"

// Redaction says that the value at Pointer (a JSON Pointer into the
// arguments) held a finding of Kind and was replaced.
type Redaction struct {
	Pointer string `json:"pointer"`
	Kind    string `json:"kind"`
}

// Record is one call's envelope.
type Record struct {
	V         int       `json:"v"`
	Nonce     string    `json:"nonce"`
	Time      time.Time `json:"time"`
	Session   string    `json:"session"`
	Principal string    `json:"principal"`
	Server    string    `json:"server"`
	Tool      string    `json:"tool"`
	// Forwarded says the call was let through and the arguments went to
	// the server (as shaped by aegis). Otherwise the call was refused, and
	// they are the model's arguments, or it awaits a person (an ask), and
	// they are the arguments an approval would forward.
	Forwarded bool `json:"forwarded"`
	// Arguments are redacted: each Redactions entry names what was taken
	// out. Arguments that were not a JSON object are recorded as a JSON
	// string of at most maxRaw bytes.
	Arguments  json.RawMessage `json:"arguments"`
	Redactions []Redaction     `json:"redactions"`
	// InputResponses are the answers a retry of a multi-round-trip
	// request (MCP 2026-07-28) gave the server's requests for input (a
	// person's answers to an elicitation), redacted like Arguments:
	// InputRedactions names what was taken out, by pointer into them.
	// Absent for any other call.
	InputResponses  json.RawMessage `json:"input_responses,omitempty"`
	InputRedactions []Redaction     `json:"input_redactions,omitempty"`
}

// maxRaw bounds what is kept of arguments that are not JSON.
const maxRaw = 4096

// Digest is a record's hash.
type Digest [32]byte

func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Hash returns the hash of a record's line (without its newline).
func Hash(line []byte) Digest {
	h := sha256.New()
	h.Write([]byte(hashDomain))
	h.Write(line)
	var d Digest
	h.Sum(d[:0])
	return d
}

// Store is the envelope directory of one server. Safe for concurrent use.
type Store struct {
	dir       string
	retention time.Duration

	mu     sync.Mutex
	nonces *rand.ChaCha8 // the records' nonces, seeded from crypto/rand
	day    int           // the day of f, as yyyymmdd
	f      *os.File
	pruned string // the day retention last ran
}

// Open opens (creating) the envelope directory dir. Records older than
// retention are deleted, by whole days, when the store opens and at each
// new day; zero keeps them forever.
//
// The records' nonces come from a ChaCha8 generator (math/rand/v2) with a
// 256-bit seed read from crypto/rand when the store opens, not from a
// system call per record. A nonce only has to be unpredictable to whoever
// holds a published chain, so that an envelope hash cannot be matched
// against guesses of a low-entropy input: ChaCha8Rand is a cryptographic
// generator (the C2SP chacha8rand design, the one Go's runtime uses):
// without its seed, its output cannot be told from random bytes nor
// predicted, so a nonce is as unguessable as one read from the system.
// (The nonces are no secret once written: each is in its record.)
func Open(dir string, retention time.Duration) (*Store, error) {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("envelope: seeding the nonces: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	return &Store{dir: dir, retention: retention, nonces: rand.NewChaCha8(seed)}, nil
}

// lineBufs holds the buffers records are written from.
var lineBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooled is the largest line buffer kept for reuse: a call with huge
// arguments does not pin its buffer.
const maxPooled = 64 << 10

// Put writes r with the record version and a fresh nonce (r itself is not
// changed) and returns the record's hash. Nil Redactions are written as
// an empty list. It is Prepare, then Write.
func (s *Store) Put(r *Record) (Digest, error) {
	p, err := s.Prepare(r)
	if err != nil {
		return Digest{}, err
	}
	return p.Digest, p.Write()
}

// A Prepared record is encoded and hashed but not written: a caller that
// must link to a record before it knows whether the record is true (a
// chain entry, made durable first, naming the envelope of a call that is
// forwarded only if that succeeds) prepares it, and writes it or drops it.
type Prepared struct {
	Digest Digest // the hash of the record's line
	s      *Store
	bp     *[]byte // the pooled buffer holding the line
	line   []byte
	at     time.Time
}

// Prepare encodes r as Put would write it and returns it with its hash.
// The Prepared MUST be written or dropped, once.
func (s *Store) Prepare(r *Record) (Prepared, error) {
	var nonce [16]byte
	s.mu.Lock()
	s.nonces.Read(nonce[:])
	s.mu.Unlock()

	bp := lineBufs.Get().(*[]byte)
	// The buffer holds the hash's domain and then the line, so that the
	// hash is one call over contiguous bytes.
	buf, err := appendLine(append((*bp)[:0], hashDomain...), r, &nonce)
	*bp = buf
	if err != nil {
		release(bp)
		return Prepared{}, err
	}
	d := Digest(sha256.Sum256(buf))
	buf = append(buf, '\n')
	*bp = buf
	return Prepared{Digest: d, s: s, bp: bp, line: buf[len(hashDomain):], at: r.Time}, nil
}

// Write writes the prepared record to its day's file.
func (p *Prepared) Write() error {
	if p.bp == nil {
		return errors.New("envelope: record written or dropped already")
	}
	defer p.Drop()
	s := p.s
	t := p.at.UTC()
	y, m, dd := t.Date()
	day := y*10000 + int(m)*100 + dd
	s.mu.Lock()
	defer s.mu.Unlock()
	if day != s.day || s.f == nil {
		if err := s.rotate(day, t.Format(time.DateOnly), p.at); err != nil {
			return err
		}
	}
	if _, err := s.f.Write(p.line); err != nil {
		return fmt.Errorf("envelope: %w", err)
	}
	return nil
}

// Drop lets go of a prepared record without writing it. Dropping one that
// was written or dropped does nothing.
func (p *Prepared) Drop() {
	if p.bp != nil {
		release(p.bp)
		p.bp, p.line = nil, nil
	}
}

// release returns a line buffer to the pool, unless it grew too large.
func release(bp *[]byte) {
	if cap(*bp) <= maxPooled {
		lineBufs.Put(bp)
	}
}

// rotate opens the file of day and, once a day, applies retention.
func (s *Store) rotate(day int, name string, now time.Time) error {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	f, err := os.OpenFile(filepath.Join(s.dir, name+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("envelope: %w", err)
	}
	s.f, s.day = f, day
	if s.pruned != name {
		s.pruned = name
		if _, err := Prune(s.dir, s.retention, now); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the store's file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Prune deletes the day files of dir whose every record is older than
// retention at now, and returns their names. Zero retention keeps all.
func Prune(dir string, retention time.Duration, now time.Time) ([]string, error) {
	if retention <= 0 {
		return nil, nil
	}
	days, err := dayFiles(dir)
	if err != nil {
		return nil, err
	}
	cutoff := now.UTC().Add(-retention)
	var gone []string
	for _, name := range days {
		day, _ := time.Parse(time.DateOnly, strings.TrimSuffix(name, ".jsonl"))
		// The file's last record is before the end of its day.
		if !day.Add(24 * time.Hour).After(cutoff) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return gone, fmt.Errorf("envelope: %w", err)
			}
			gone = append(gone, name)
		}
	}
	return gone, nil
}

// dayFiles lists the day files of dir, oldest first. Other files are
// ignored.
func dayFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if _, err := time.Parse(time.DateOnly, strings.TrimSuffix(name, ".jsonl")); err != nil {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// ErrNotFound is returned by Find for a hash no kept record has: deleted by
// retention, lost, or never written.
var ErrNotFound = errors.New("envelope: no such record")

// Find returns the record of dir whose hash is d, searching the day files
// newest first. The record is checked against d, so an edited file cannot
// answer for a hash.
func Find(dir string, d Digest) (*Record, error) {
	days, err := dayFiles(dir)
	if err != nil {
		return nil, err
	}
	for i := len(days) - 1; i >= 0; i-- {
		rec, err := findIn(filepath.Join(dir, days[i]), d)
		if err != nil || rec != nil {
			return rec, err
		}
	}
	return nil, ErrNotFound
}

func findIn(path string, d Digest) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("envelope: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if Hash(sc.Bytes()) != d {
			continue
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("envelope: %s: %w", path, err)
		}
		return &r, nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("envelope: %s: %w", path, err)
	}
	return nil, nil
}

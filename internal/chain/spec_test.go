package chain

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/record"
)

// specBlock returns the fenced block after the marker comment in SPEC.md.
func specBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile("../../SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "<!-- "+marker+" -->\n```\n")
	if i < 0 {
		t.Fatalf("SPEC.md has no block %s", marker)
	}
	s = s[i+len("<!-- "+marker+" -->\n```\n"):]
	return s[:strings.Index(s, "```\n")]
}

// TestSpecVector checks that the example in SPEC.md verifies, so the
// document and the code cannot drift apart.
func TestSpecVector(t *testing.T) {
	pub, err := ParsePublicKey([]byte(specBlock(t, "spec-vector-key")))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(specBlock(t, "spec-vector-segment")), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyWith(dir, pub, &VerifyOptions{AllSignatures: true, Strict: true})
	if err != nil || rep.Entries != 3 || rep.Signed != 3 || rep.Checkpoints != 2 {
		t.Fatalf("SPEC.md example: %+v, %v", rep, err)
	}
	if KeyID(pub) != "56475aa75463474c" {
		t.Errorf("key id %s", KeyID(pub))
	}
}

// TestSpecSubtreeVector checks SPEC.md's subtree example: it verifies
// strictly with the example key, and its capability reads back as a
// subtree; the python verifier agrees (TestSpecPythonVerifier).
func TestSpecSubtreeVector(t *testing.T) {
	pub, err := ParsePublicKey([]byte(specBlock(t, "spec-vector-key")))
	if err != nil {
		t.Fatal(err)
	}
	seg := specBlock(t, "spec-vector-subtree")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(seg), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyWith(dir, pub, &VerifyOptions{AllSignatures: true, Strict: true})
	if err != nil || rep.Entries != 1 || rep.Signed != 1 {
		t.Fatalf("SPEC.md subtree example: %+v, %v", rep, err)
	}
	var e record.Entry
	if _, err := record.Decode([]byte(strings.SplitN(seg, "\n", 2)[0]), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Caps) != 1 || !e.Caps[0].Subtree || e.Caps[0].Path != "/home/alice" {
		t.Errorf("decoded capabilities %+v, want one subtree fs.read of /home/alice", e.Caps)
	}
}

// TestSpecPythonVerifier runs testdata/spec_verify.py, a verifier written
// from SPEC.md alone in another language, beside Verify on the same chains
// (the example, a chain written by a Log, and tampered pictures) and
// requires the same verdicts.
func TestSpecPythonVerifier(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	if err := exec.Command("python3", "-c", "import cryptography").Run(); err != nil {
		t.Skip("python3 has no cryptography module")
	}
	script, _ := filepath.Abs("testdata/spec_verify.py")
	goVerdict := func(dir string, pub []byte, all bool) string {
		k, err := ParsePublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := VerifyWith(dir, k, &VerifyOptions{AllSignatures: all})
		var be *BreakError
		switch {
		case errors.As(err, &be):
			return fmt.Sprintf("break %s seq=%d", map[BreakKind]string{
				BreakMalformed: "malformed", BreakSeq: "sequence", BreakLink: "link",
				BreakHash: "hash", BreakCheckpoint: "checkpoint", BreakSignature: "signature",
			}[be.Kind], be.Seq)
		case err != nil:
			t.Fatal(err)
		}
		return fmt.Sprintf("ok entries=%d signed=%d torn=%d acked=%d", rep.Entries, rep.Signed, rep.TornBytes, rep.Acked)
	}
	// Each chain is verified twice by each side, with and without every
	// signature checked. The script runs once, at the end, on every case
	// (--batch): Python's start, not the verifying, was most of its time.
	type verdictCase struct {
		name string
		all  bool
		args []string // spec_verify.py's
		want string   // Verify's
	}
	var cases []verdictCase
	same := func(name, dir, pubPEM string) {
		t.Helper()
		keyFile := filepath.Join(t.TempDir(), "pub.pem")
		if err := os.WriteFile(keyFile, []byte(pubPEM), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, all := range []bool{false, true} {
			args := []string{dir, keyFile}
			if all {
				args = append(args, "--all-signatures")
			}
			cases = append(cases, verdictCase{name, all, args, goVerdict(dir, []byte(pubPEM), all)})
		}
	}
	// pythonAgrees runs the script on the cases gathered and compares.
	pythonAgrees := func() {
		t.Helper()
		var in bytes.Buffer
		for _, c := range cases {
			b, _ := json.Marshal(c.args)
			in.Write(append(b, '\n'))
		}
		cmd := exec.Command("python3", script, "--batch")
		cmd.Stdin = &in
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("spec_verify.py: %v\n%s", err, stderr.Bytes())
		}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != len(cases) {
			t.Fatalf("spec_verify.py printed %d verdicts for %d cases:\n%s", len(lines), len(cases), out)
		}
		for i, c := range cases {
			var got string
			if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
				t.Fatalf("spec_verify.py's verdict %d (%s): %v: %s", i, c.name, err, lines[i])
			}
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("%s (all signatures %v): python says %q, Verify says %q", c.name, c.all, got, c.want)
			}
		}
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(specBlock(t, "spec-vector-segment")), 0o600)
	same("SPEC.md example", dir, specBlock(t, "spec-vector-key"))
	subDir := t.TempDir()
	os.WriteFile(filepath.Join(subDir, segmentName(1)), []byte(specBlock(t, "spec-vector-subtree")), 0o600)
	same("SPEC.md subtree example", subDir, specBlock(t, "spec-vector-key"))

	logDir := memTempDir(t)
	l := openT(t, logDir, &Options{SegmentSize: 4 << 10, wrap: noSync})
	for i := range 40 {
		e := sample()
		e.Caps[0].Path = fmt.Sprintf("/tmp/é\x01\"%d", i)
		if _, _, err := l.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	same("Log output", logDir, string(MarshalPublicKey(l.PublicKey())))

	_, fresh := testKey(t, 42)
	for _, tc := range []struct {
		name  string
		alter func(p *picture)
	}{
		{"edit", func(p *picture) { p.edit("B", false, func(e *record.Entry) { e.Principal = "m" }) }},
		{"edit and rehash", func(p *picture) { p.edit("B", true, func(e *record.Entry) { e.Principal = "m" }) }},
		{"delete", func(p *picture) { p.remove("B", true); p.remove("B", false) }},
		{"torn", func(p *picture) { l := p.line("C", true); *l = (*l)[:30] }},
		{"forged", func(p *picture) { p.batch(fresh, "D") }},
		{"flip A's signature", func(p *picture) { flipSig(p.line("A", true)) }},
		{"non-canonical", func(p *picture) { l := p.line("B", false); *l = strings.Replace(*l, `"user-b"`, `"user-\u0062"`, 1) }},
		{"segment missing", func(p *picture) { p.segs[1] = nil }},
	} {
		p := draw(t, "G -> A | B -> C | D")
		tc.alter(p)
		same(tc.name, p.write(), string(MarshalPublicKey(p.pub)))
	}

	// Ack lines: as a Log writes them, and moved, repeated, torn, or not in
	// the stored form. The picture's second segment is: B, ack, C, ack, ck,
	// D, ack.
	setLine := func(i int, f func(string) string) func(p *picture) {
		return func(p *picture) { p.segs[1][i] = f(p.segs[1][i]) }
	}
	for _, tc := range []struct {
		name  string
		alter func(p *picture)
	}{
		{"acks as written", func(p *picture) {}},
		{"ack 0", setLine(1, func(l string) string { return strings.Replace(l, `{"ack":3,`, `{"ack":0,`, 1) })},
		{"ack past 2^53-1", setLine(1, func(l string) string { return strings.Replace(l, `{"ack":3,`, `{"ack":9007199254740992,`, 1) })},
		{"ack with a leading zero", setLine(1, func(l string) string { return strings.Replace(l, `{"ack":3,`, `{"ack":03,`, 1) })},
		{"ack as a float", setLine(1, func(l string) string { return strings.Replace(l, `{"ack":3,`, `{"ack":3.0,`, 1) })},
		{"ack with a space", setLine(1, func(l string) string { return strings.Replace(l, `{"ack":3,`, `{"ack": 3,`, 1) })},
		{"ack with an extra key", setLine(1, func(l string) string { return strings.Replace(l, `"}`, `","x":1}`, 1) })},
		{"ack in upper-case hex", setLine(1, func(l string) string { return l[:len(l)-67] + strings.ToUpper(l[len(l)-67:len(l)-3]) + l[len(l)-3:] })},
		{"ack ending in CR LF", setLine(1, func(l string) string { return strings.TrimSuffix(l, "\n") + "\r\n" })},
		{"checkpoint 0", func(p *picture) {
			p.segs[0][1] = strings.Replace(p.segs[0][1], `{"checkpoint":1,`, `{"checkpoint":0,`, 1)
		}},
		{"ack twice", func(p *picture) { p.segs[1] = slices.Insert(p.segs[1], 2, p.segs[1][1]) }},
		{"ack first in a segment", func(p *picture) { p.segs[1] = slices.Insert(p.segs[1], 0, p.segs[1][1]) }},
		{"ack after a checkpoint", func(p *picture) { p.segs[1] = slices.Insert(p.segs[1], 5, p.segs[1][3]) }},
		{"ack removed", func(p *picture) { p.segs[1] = slices.Delete(p.segs[1], 1, 2) }},
		{"last ack torn", setLine(6, func(l string) string { return l[:20] })},
		{"checkpoint torn after the last ack", func(p *picture) { p.segs[1] = append(p.segs[1], p.segs[1][4][:40]) }},
		{"segment ending in an ack", func(p *picture) {
			k := newAcker(p.priv).make(2, p.entries["A"].Hash)
			p.segs[0][len(p.segs[0])-1] = string(appendAck(nil, &k))
		}},
	} {
		p := draw(t, "G -> A | B ack C ack ck -> D ack")
		tc.alter(p)
		same(tc.name, p.write(), string(MarshalPublicKey(p.pub)))
	}
	pythonAgrees()
}

// TestSpecAckVector checks the ack in SPEC.md's example: its MAC is the one
// the example key's writer makes for entry 3, and it sits where a writer
// puts it.
func TestSpecAckVector(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	line := []byte(strings.TrimSuffix(specBlock(t, "spec-vector-ack"), "\n"))
	k, err := decodeAck(line)
	if err != nil {
		t.Fatal(err)
	}
	if !newAcker(priv).check(&k) || k.seq != 3 {
		t.Fatalf("SPEC.md's ack %s is not the example key's for entry 3", line)
	}
	// Put after entry 3 of the example, it verifies as an ack a checkpoint follows.
	seg := specBlock(t, "spec-vector-segment")
	lines := strings.SplitAfter(seg, "\n")
	seg = strings.Join(lines[:4], "") + string(line) + "\n" + strings.Join(lines[4:], "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(seg), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyWith(dir, priv.Public().(ed25519.PublicKey), &VerifyOptions{AllSignatures: true, Strict: true, AckKey: priv})
	if err != nil || rep.Entries != 3 || rep.Signed != 3 {
		t.Fatalf("the example with the ack: %+v, %v", rep, err)
	}
}

package chain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	python := func(dir, pubPEM string, all bool) string {
		t.Helper()
		keyFile := filepath.Join(t.TempDir(), "pub.pem")
		os.WriteFile(keyFile, []byte(pubPEM), 0o644)
		args := []string{script, dir, keyFile}
		if all {
			args = append(args, "--all-signatures")
		}
		out, err := exec.Command("python3", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("spec_verify.py: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
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
		return fmt.Sprintf("ok entries=%d signed=%d torn=%d", rep.Entries, rep.Signed, rep.TornBytes)
	}
	same := func(name, dir, pubPEM string) {
		for _, all := range []bool{false, true} {
			got, want := python(dir, pubPEM, all), goVerdict(dir, []byte(pubPEM), all)
			if !strings.HasPrefix(got, want) {
				t.Errorf("%s (all signatures %v): python says %q, Verify says %q", name, all, got, want)
			}
		}
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, segmentName(1)), []byte(specBlock(t, "spec-vector-segment")), 0o600)
	same("SPEC.md example", dir, specBlock(t, "spec-vector-key"))

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
		{"edit", func(p *picture) { p.edit("B", false, func(e *Entry) { e.Principal = "m" }) }},
		{"edit and rehash", func(p *picture) { p.edit("B", true, func(e *Entry) { e.Principal = "m" }) }},
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
}

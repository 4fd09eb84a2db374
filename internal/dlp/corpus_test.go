package dlp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The thresholds the corpus must meet. They are what the package promises; a change
// that lowers detection or raises false positives past them fails TestCorpus.
const (
	minDetection     = 0.99  // per kind, on the positive corpus
	maxFPRate        = 0.001 // negative samples with any finding, overall
	maxFPRateCat     = 0.01  // negative samples with any finding, per category
	maxFindingsPerMB = 1.0   // findings in the bulk negative text, per MiB
	samplesPerToken  = 6     // fakes per token kind for each {{token}} template
	samplesPerLine   = 25    // fakes for each other template
)

// sample is one text of the positive corpus and the findings it must produce.
type sample struct {
	line int
	text string
	want []Finding
}

// loadPositives expands testdata/positives.txt (see its header).
func loadPositives(t testing.TB) []sample {
	t.Helper()
	data, err := os.ReadFile("testdata/positives.txt")
	if err != nil {
		t.Fatal(err)
	}
	f := newFaker(1)
	var out []sample
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tmpl := unescape(line)
		if strings.Contains(tmpl, "{{token}}") {
			for _, k := range tokenKinds {
				for range samplesPerToken {
					out = append(out, expand(t, f, n+1, strings.ReplaceAll(tmpl, "{{token}}", "{{"+string(k)+"}}")))
				}
			}
			continue
		}
		for range samplesPerLine {
			out = append(out, expand(t, f, n+1, tmpl))
		}
	}
	return out
}

// unescape reads the \n, \t and \\ escapes of a template line.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// expand fills the placeholders of one template.
func expand(t testing.TB, f *faker, line int, tmpl string) sample {
	t.Helper()
	var b strings.Builder
	s := sample{line: line}
	for {
		i := strings.Index(tmpl, "{{")
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		j := strings.Index(tmpl[i:], "}}")
		if j < 0 {
			t.Fatalf("positives.txt:%d: unclosed placeholder", line)
		}
		b.WriteString(tmpl[:i])
		spec := strings.Split(tmpl[i+2:i+j], "|")
		k := Kind(spec[0])
		if !k.Known() {
			t.Fatalf("positives.txt:%d: unknown kind %q", line, k)
		}
		v := f.secret(k)
		for _, tr := range spec[1:] {
			v = transform(t, line, tr, v)
		}
		start := b.Len()
		b.WriteString(v)
		s.want = append(s.want, Finding{Kind: k, Start: start, End: b.Len()})
		if k == GCPServiceAccount {
			s.want = append(s.want, Finding{Kind: PrivateKey, Start: start, End: b.Len()})
		}
		tmpl = tmpl[i+j+2:]
	}
	s.text = b.String()
	return s
}

func transform(t testing.TB, line int, name, v string) string {
	switch name {
	case "json":
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(b.String()), `"`), `"`)
	case "url":
		return url.QueryEscape(v)
	case "indent":
		return strings.ReplaceAll(v, "\n", "\n  ")
	case "truncate":
		lines := strings.Split(v, "\n")
		return strings.Join(lines[:max(2, len(lines)*2/3)], "\n")
	case "digits":
		return strings.NewReplacer(" ", "", "-", "").Replace(v)
	}
	t.Fatalf("positives.txt:%d: unknown transform %q", line, name)
	return ""
}

// negative is one text of the negative corpus, from a category.
type negative struct {
	cat, text string
}

// loadNegatives reads the committed texts in testdata/negatives (each blank-line
// separated block is a sample; placeholders.txt is one sample per line) and adds the
// generated categories of negatives.go.
func loadNegatives(t testing.TB) []negative {
	t.Helper()
	files, err := filepath.Glob("testdata/negatives/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no negative corpus: %v", err)
	}
	var out []negative
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		cat := strings.TrimSuffix(filepath.Base(name), ".txt")
		if cat == "placeholders" {
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
					out = append(out, negative{cat, unescape(l)})
				}
			}
			continue
		}
		for block := range strings.SplitSeq(string(data), "\n\n") {
			if strings.TrimSpace(block) != "" {
				out = append(out, negative{cat, block})
			}
		}
	}
	return append(out, generatedNegatives(newFaker(2))...)
}

func TestCorpus(t *testing.T) {
	pos := loadPositives(t)
	type tally struct{ n, found, exact int }
	perKind := map[Kind]*tally{}
	extra := map[Kind]int{}
	var misses []string
	for _, s := range pos {
		got := Scan(s.text, nil)
		for _, w := range s.want {
			tl := perKind[w.Kind]
			if tl == nil {
				tl = &tally{}
				perKind[w.Kind] = tl
			}
			tl.n++
			if slices.Contains(got, w) {
				tl.found++
				tl.exact++
				continue
			}
			if slices.ContainsFunc(got, func(f Finding) bool { return f.Kind == w.Kind && f.Start <= w.Start && f.End >= w.End }) {
				tl.found++ // covered, but not exactly
			}
			if len(misses) < 40 {
				misses = append(misses, fmt.Sprintf("positives.txt:%d: want %s %q in %q; got %v", s.line, w.Kind, s.text[w.Start:w.End], s.text, got))
			}
		}
		for _, g := range got {
			if !slices.ContainsFunc(s.want, func(w Finding) bool { return w.Kind == g.Kind }) {
				extra[g.Kind]++
			}
		}
	}
	for _, m := range misses {
		t.Log(m)
	}
	total, found := 0, 0
	for _, k := range Kinds() {
		tl := perKind[k]
		if tl == nil {
			t.Errorf("kind %s: no positive sample in the corpus", k)
			continue
		}
		total += tl.n
		found += tl.found
		rate := float64(tl.found) / float64(tl.n)
		t.Logf("detection %-20s %5d/%-5d = %6.2f%%  (exact span %d)", k, tl.found, tl.n, 100*rate, tl.exact)
		if rate < minDetection {
			t.Errorf("kind %s: detection %.4f below the threshold %.2f", k, rate, minDetection)
		}
	}
	t.Logf("detection overall %d/%d = %.3f%%, positive samples %d, other kinds found alongside: %v", found, total, 100*float64(found)/float64(total), len(pos), extra)

	negs := loadNegatives(t)
	perCat := map[string]*tally{}
	var cats []string
	fps, bytesTotal := 0, 0
	for _, n := range negs {
		tl := perCat[n.cat]
		if tl == nil {
			tl = &tally{}
			perCat[n.cat] = tl
			cats = append(cats, n.cat)
		}
		tl.n++
		bytesTotal += len(n.text)
		if got := Scan(n.text, nil); len(got) > 0 {
			tl.found++
			fps++
			if tl.found <= 3 {
				t.Logf("false positive [%s] %v in %q", n.cat, got, excerpt(n.text, got[0]))
			}
		}
	}
	slices.Sort(cats)
	for _, c := range cats {
		tl := perCat[c]
		rate := float64(tl.found) / float64(tl.n)
		t.Logf("false positives %-16s %4d/%-5d = %6.3f%%", c, tl.found, tl.n, 100*rate)
		if rate > maxFPRateCat {
			t.Errorf("category %s: false positive rate %.4f above the threshold %.3f", c, rate, maxFPRateCat)
		}
	}
	rate := float64(fps) / float64(len(negs))
	t.Logf("false positives overall %d/%d samples = %.4f%% (%d bytes)", fps, len(negs), 100*rate, bytesTotal)
	if rate > maxFPRate {
		t.Errorf("false positive rate %.5f above the threshold %.4f", rate, maxFPRate)
	}

	// Not a threshold: the rate at which random 16-digit integers read as card numbers.
	// It is inherent (a tenth of the numbers with an issuer's prefix pass Luhn), and it
	// is why a column of random 16-digit ids can hold "card numbers".
	f := newFaker(6)
	cards := 0
	const ints = 10000
	for range ints {
		if got := Scan(f.pick("123456789", 1)+f.digits(15), nil); len(got) > 0 {
			cards++
		}
	}
	t.Logf("random 16-digit integers reported as cards: %d/%d = %.2f%% (inherent, no threshold)", cards, ints, 100*float64(cards)/ints)

	bulk := bulkNegative(newFaker(3), 512<<10)
	got := Scan(bulk, nil)
	perMB := float64(len(got)) / (float64(len(bulk)) / (1 << 20))
	t.Logf("bulk negative text: %d bytes, %d findings (%.2f per MiB)", len(bulk), len(got), perMB)
	for i, g := range got {
		if i < 5 {
			t.Logf("bulk finding %v in %q", g, excerpt(bulk, g))
		}
	}
	if perMB > maxFindingsPerMB {
		t.Errorf("bulk negative text: %.2f findings per MiB, above the threshold %.1f", perMB, maxFindingsPerMB)
	}
}

// excerpt shows a finding with some context, for test logs only (fake data).
func excerpt(s string, f Finding) string {
	return s[max(0, f.Start-40):min(len(s), f.End+40)]
}

package main

import (
	"sync"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/dlp"
)

// envelopeDocs lends redactEnvelope a document to decode arguments into,
// so that arguments in which DLP finds nothing cost no allocation.
var envelopeDocs = sync.Pool{New: func() any { return new(args.Doc) }}

// emptyObject is what a document given back to envelopeDocs holds.
var emptyObject = []byte("{}")

// hasFindings reports whether DLP finds anything in arguments a, decoded
// as dlp.ScanJSON decodes them; ok is false when they cannot be decoded.
// The document reads a in place, and lets go of it before it is given
// back.
func hasFindings(a []byte) (found, ok bool) {
	doc := envelopeDocs.Get().(*args.Doc)
	defer func() {
		doc.DecodeBorrowed(emptyObject, nil) // reads nothing of a
		envelopeDocs.Put(doc)
	}()
	if err := doc.DecodeBorrowed(a, nil); err != nil {
		return false, false
	}
	return len(dlp.ScanValue(doc.Root(), nil)) > 0, true
}

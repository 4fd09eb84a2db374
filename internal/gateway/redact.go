package gateway

import (
	"sync"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/envelope"
)

// envelopeDocs lends redactEnvelope a document to decode arguments into,
// so that arguments in which DLP finds nothing cost no allocation.
var envelopeDocs = sync.Pool{New: func() any { return new(args.Doc) }}

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

// redactEnvelope takes every secret DLP finds out of arguments before they
// enter an envelope, whatever the server's DLP actions say: an envelope
// keeps what a call carried, never a secret. Arguments aegis cannot read
// are kept out whole. Arguments in which DLP finds nothing, most of them,
// are kept as they are rather than re-encoded: the same JSON value, as
// forwarded (TestRedactEnvelopeFastPath holds this to the re-encoding).
func redactEnvelope(a []byte) ([]byte, []envelope.Redaction) {
	if found, ok := hasFindings(a); ok && !found {
		return a, nil
	}
	return redactAll(a)
}

// redactAll is redactEnvelope without its fast path: the arguments
// re-encoded by dlp.RedactJSON, secrets taken out.
func redactAll(a []byte) ([]byte, []envelope.Redaction) {
	out, found, err := dlp.RedactJSON(a, nil, nil)
	if err != nil {
		return []byte(`"(arguments aegis could not read are not kept)"`), nil
	}
	reds := make([]envelope.Redaction, 0, len(found))
	for _, f := range found {
		reds = append(reds, envelope.Redaction{Pointer: f.Pointer, Kind: string(f.Kind)})
	}
	return out, reds
}

// Package dlp owns data loss prevention: finding secrets and personal data in the
// strings that cross aegis (argument values before a call is forwarded, result text
// before it is returned), naming what it found by [Kind] and byte span, and redacting
// it. It does no I/O and keeps no state.
//
// It leaves decisions to others: [Actions] maps each kind to deny, ask, redact or
// report, and the gateway applies the strictest one and records the findings by kind
// and location ([Located]), never by value.
//
// # What it finds
//
// Cloud credentials (AWS access key ids and secret keys, Azure account keys and SAS
// signatures, Google Cloud service-account keys, Google API keys and OAuth tokens),
// platform tokens (GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic, npm, PyPI, Twilio,
// SendGrid), private key blocks, JWTs, payment card numbers, and passwords in URLs,
// connection strings, HTTP Authorization headers and configuration entries. [Kinds]
// lists every kind with a stable name. Checksums cut false positives where a format has
// one: the CRC-32 of GitHub and npm tokens, the Luhn digit of card numbers, the "alg"
// of a JWT header.
//
// # What it does not find
//
// A secret that was encoded otherwise than in base64 (hex, reversed, case-swapped),
// split across two strings, or written in look-alike characters is not found; nor is a secret whose
// format announces nothing (a bare random password). Scanning stops accidental
// disclosure and careless exfiltration, not a model set on smuggling data out: that is
// what the policy's capabilities and egress rules are for. Obvious placeholders
// (AKIAXXXXXXXXXXXXXXXX, the AWS documentation's …EXAMPLE keys, "sk-...", ${PASSWORD},
// <password>, "password", "changeme") are not reported, and neither are Stripe
// test-mode keys.
//
// # Base64
//
// Base64 is decoded where a detector can tell: a binary field (blob, data) as a whole,
// and every run of base64 in any string, in either alphabet, padded or not, wrapped
// across lines, percent-encoded, from each of the four alignments, nested up to three
// deep. A run counts only if Scan finds something in what it decodes to; its findings
// are marked [Located.InBase64], and redaction re-encodes the run in its own spelling,
// or replaces it whole with a marker when that spelling cannot be reproduced. A run is
// decoded only if its characters say some alignment decodes to six ASCII bytes in a
// row, which paths and identifiers seldom do, so most strings cost one pass over their
// bytes.
//
// # Speed
//
// [Scan] makes one pass that stops only at the bytes a secret can be anchored on ('_',
// '-', '.', ':', '=', '%', 'A', 'S', digits, and the lead bytes of invisible
// characters), reading eight bytes at a time by arithmetic and a table only where that
// flags a candidate. It runs hand-written matchers there that read a bounded window or
// advance past what they read, and allocates nothing unless it finds something. Its time
// is linear in the input, whatever the input. A string shorter than the shortest
// finding (six bytes), and a JSON number shorter than a card number, are passed over
// unread.
//
// # Example
//
//	fs := dlp.Scan(text, nil)
//	switch act, found := acts.Decide(fs); {
//	case !found:
//	case act == dlp.ActionRedact:
//		text = dlp.Redact(text, fs)
//	default:
//		return deny(fs) // record fs[i].Kind, never text[fs[i].Start:fs[i].End]
//	}
package dlp

package dlp

import (
	"encoding/base64"
	"encoding/json"
	"hash/crc32"
	"math/rand/v2"
	"net/url"
	"strings"
)

// Fake secrets for the tests, made at run time from a seeded generator so that the
// repository holds no string that a secret scanner (GitHub push protection, for one)
// would take for a live credential. Prefixes are split ("sk_" + "live_") for the same
// reason.

const (
	alnum     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b64urlSet = alnum + "-_"
	b64Set    = alnum + "+/"
	base32Set = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	hexSet    = "0123456789abcdef"
)

// faker makes fake secrets from a deterministic source.
type faker struct{ r *rand.Rand }

func newFaker(seed uint64) *faker {
	return &faker{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (f *faker) pick(set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[f.r.IntN(len(set))]
	}
	return string(b)
}

func (f *faker) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(f.r.UintN(256))
	}
	return b
}

func (f *faker) digits(n int) string { return f.pick("0123456789", n) }

func (f *faker) oneOf(xs ...string) string { return xs[f.r.IntN(len(xs))] }

// withChecksum appends the 6-digit base62 CRC-32 of body, as GitHub and npm tokens do.
// It is written independently of the package's checksum62.
func withChecksum(prefix, body string) string {
	crc := crc32.ChecksumIEEE([]byte(body))
	var sum [6]byte
	for i := 5; i >= 0; i-- {
		sum[i] = alnum[crc%62]
		crc /= 62
	}
	return prefix + body + string(sum[:])
}

// secret returns a fake secret of kind k: exactly the text Scan should report.
func (f *faker) secret(k Kind) string {
	switch k {
	case AWSAccessKey:
		return f.oneOf("AKIA", "ASIA") + f.pick(base32Set, 16)
	case AWSSecretKey:
		// Random base64 with the classes an AWS secret key has.
		return f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 1) + f.pick("abcdefghijklmnopqrstuvwxyz", 1) + f.pick("0123456789", 1) + f.pick(b64Set, 37)
	case AzureAccountKey:
		return base64.StdEncoding.EncodeToString(f.bytes(64))
	case AzureSAS:
		return url.QueryEscape(base64.StdEncoding.EncodeToString(f.bytes(32)))
	case GCPServiceAccount:
		return f.pem("PRIVATE KEY", 1190, 64)
	case GoogleAPIKey:
		return "AI" + "za" + f.pick(b64urlSet, 35)
	case GoogleOAuth:
		if f.r.IntN(2) == 0 {
			return "ya" + "29." + f.pick(b64urlSet, 60+f.r.IntN(120))
		}
		return "GOC" + "SPX-" + f.pick(b64urlSet, 28)
	case GitHubToken:
		if f.r.IntN(4) == 0 {
			return "github" + "_pat_" + f.pick(alnum, 22) + "_" + f.pick(alnum, 59)
		}
		return withChecksum(f.oneOf("ghp", "gho", "ghu", "ghs", "ghr")+"_", f.pick(alnum, 30))
	case GitLabToken:
		return f.oneOf("gl"+"pat-", "gl"+"pat-", "gl"+"dt-", "gl"+"rt-") + f.pick(b64urlSet, 20)
	case SlackToken:
		switch f.r.IntN(3) {
		case 0:
			return "xo" + "xb-" + f.digits(12) + "-" + f.digits(13) + "-" + f.pick(alnum, 24)
		case 1:
			return "xo" + "xp-" + f.digits(12) + "-" + f.digits(12) + "-" + f.digits(13) + "-" + f.pick(hexSet, 32)
		}
		return "xa" + "pp-1-A" + f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10) + "-" + f.digits(13) + "-" + f.pick(hexSet, 64)
	case SlackWebhook:
		return "services/T" + f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10) + "/B" + f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10) + "/" + f.pick(alnum, 24)
	case StripeKey:
		return f.oneOf("sk", "rk") + "_live_" + f.pick(alnum, 24+f.r.IntN(76))
	case OpenAIKey:
		switch f.r.IntN(3) {
		case 0:
			return "sk-" + "proj-" + f.pick(b64urlSet, 156)
		case 1:
			return "sk-" + "svcacct-" + f.pick(b64urlSet, 156)
		}
		return "sk-" + f.pick(alnum, 20) + "T3Blbk" + "FJ" + f.pick(alnum, 20)
	case AnthropicKey:
		return "sk-" + "ant-api03-" + f.pick(b64urlSet, 93) + "AA"
	case NPMToken:
		return withChecksum("npm_", f.pick(alnum, 30))
	case PyPIToken:
		return "py" + "pi-AgEIcHlwaS5vcmc" + f.pick(b64urlSet, 120+f.r.IntN(60))
	case TwilioKey:
		return "SK" + f.pick(hexSet, 32)
	case SendGridKey:
		return "SG" + "." + f.pick(b64urlSet, 22) + "." + f.pick(b64urlSet, 43)
	case PrivateKey:
		switch f.r.IntN(6) {
		case 0:
			return f.pem("RSA PRIVATE KEY", 1190, 64)
		case 1:
			return f.pem("EC PRIVATE KEY", 121, 64)
		case 2:
			return f.pem("OPENSSH PRIVATE KEY", 400, 70)
		case 3:
			return f.pem("ENCRYPTED PRIVATE KEY", 1300, 64)
		case 4:
			return "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + wrap(base64.StdEncoding.EncodeToString(f.bytes(900)), 64) +
				"\n=" + f.pick(b64Set, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----"
		}
		return f.pem("PRIVATE KEY", 1190, 64)
	case JWT:
		return f.jwt()
	case Card:
		return f.card()
	case URLPassword, ConnPassword:
		return f.pick(alnum, 6+f.r.IntN(10)) + f.oneOf("", "%21", "%40", "-", "_", "~", "!") + f.pick(alnum, 2)
	case ConfigSecret:
		return f.pick(alnum, 8+f.r.IntN(16)) + f.oneOf("", "!", "-", "_", "+", "^") + f.pick(alnum, 2)
	case HTTPAuth:
		return f.pick(b64urlSet, 24+f.r.IntN(40))
	}
	panic("no fake for " + string(k))
}

func (f *faker) pem(label string, n, width int) string {
	return "-----BEGIN " + label + "-----\n" + wrap(base64.StdEncoding.EncodeToString(f.bytes(n)), width) + "\n-----END " + label + "-----"
}

func wrap(s string, width int) string {
	var b strings.Builder
	for len(s) > width {
		b.WriteString(s[:width])
		b.WriteByte('\n')
		s = s[width:]
	}
	b.WriteString(s)
	return b.String()
}

func (f *faker) jwt() string {
	enc := base64.RawURLEncoding.EncodeToString
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return enc(b)
	}
	claims := map[string]any{
		"sub": f.pick(alnum, 12), "iat": 1700000000 + f.r.IntN(50000000), "exp": 1800000000 + f.r.IntN(50000000),
		"iss": "https://auth." + f.oneOf("example.com", "acme.test", "corp.internal") + "/",
	}
	switch f.r.IntN(5) {
	case 0:
		return js(map[string]any{"alg": "HS256", "typ": "JWT"}) + "." + js(claims) + "." + enc(f.bytes(32))
	case 1:
		return js(map[string]any{"alg": "RS256", "kid": f.pick(alnum, 16), "typ": "JWT"}) + "." + js(claims) + "." + enc(f.bytes(256))
	case 2:
		return js(map[string]any{"typ": "JWT", "alg": "ES256"}) + "." + js(claims) + "." + enc(f.bytes(64))
	case 3:
		return js(map[string]any{"alg": "none"}) + "." + js(claims) + "."
	}
	// A JWE: five parts.
	return js(map[string]any{"alg": "RSA-OAEP-256", "enc": "A256GCM"}) + "." + enc(f.bytes(256)) + "." + enc(f.bytes(12)) + "." + enc(f.bytes(80)) + "." + enc(f.bytes(16))
}

// card returns a card number of a random network with a valid Luhn digit, contiguous or
// grouped as printed on cards.
func (f *faker) card() string {
	type network struct {
		prefix string
		length int
	}
	nets := []network{
		{"4", 16}, {"4", 19}, {"51", 16}, {"55", 16}, {"2221", 16}, {"2720", 16},
		{"34", 15}, {"37", 15}, {"6011", 16}, {"65", 16}, {"644", 16}, {"3528", 16}, {"3589", 16},
		{"36", 14}, {"300", 14}, {"62", 16}, {"62", 19}, {"2200", 16}, {"6759", 16},
	}
	n := nets[f.r.IntN(len(nets))]
	d := []byte(n.prefix + f.digits(n.length-len(n.prefix)-1))
	d = append(d, luhnDigit(d))
	s := string(d)
	sep := f.oneOf("", "", " ", "-")
	if sep == "" {
		return s
	}
	var groups []int
	switch len(s) {
	case 15:
		groups = []int{4, 6, 5}
	case 14:
		groups = []int{4, 6, 4}
	default:
		for left := len(s); left > 0; left -= 4 {
			groups = append(groups, min(4, left))
		}
	}
	var parts []string
	for _, g := range groups {
		parts = append(parts, s[:g])
		s = s[g:]
	}
	return strings.Join(parts, sep)
}

// luhnDigit returns the check digit that makes payload+digit Luhn-valid.
func luhnDigit(payload []byte) byte {
	sum := 0
	for i := len(payload) - 1; i >= 0; i-- {
		v := int(payload[i] - '0')
		if (len(payload)-i)%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return byte('0' + (10-sum%10)%10)
}

// tokenKinds are the kinds found from their own format, anywhere: the kinds that the
// generic contexts of the corpus ({{token}}) stand for.
var tokenKinds = []Kind{
	AWSAccessKey, GoogleAPIKey, GoogleOAuth, GitHubToken, GitLabToken, SlackToken, StripeKey,
	OpenAIKey, AnthropicKey, NPMToken, PyPIToken, TwilioKey, SendGridKey, JWT,
}

package dlp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// negativeSamples is how many samples each generated category has.
const negativeSamples = 300

// generatedNegatives makes the structured negatives: texts that look like secrets to a
// careless matcher and are not. Each category is documented where it is made.
func generatedNegatives(f *faker) []negative {
	var out []negative
	add := func(cat string, gen func() string) {
		for range negativeSamples {
			out = append(out, negative{cat, gen()})
		}
	}
	// Git object names, alone and in logs.
	add("git-sha", func() string {
		sha := f.pick(hexSet, 40)
		return f.oneOf("commit "+sha, sha, "Merge: "+sha[:7]+" "+f.pick(hexSet, 7), "https://github.com/acme/app/commit/"+sha, `{"sha":"`+sha+`"}`)
	})
	// SHA-256 and SHA-512 digests as tools print them.
	add("sha-hex", func() string {
		h := f.pick(hexSet, 64)
		return f.oneOf(h+"  dist/app.tar.gz", "sha256:"+h, "SHA256 ("+"app.zip) = "+h, f.pick(hexSet, 128), strings.ToUpper(h))
	})
	// UUIDs in every case and in JSON.
	add("uuid", func() string {
		u := f.pick(hexSet, 8) + "-" + f.pick(hexSet, 4) + "-4" + f.pick(hexSet, 3) + "-a" + f.pick(hexSet, 3) + "-" + f.pick(hexSet, 12)
		return f.oneOf(u, strings.ToUpper(u), `{"id":"`+u+`","parent":"`+u+`"}`, "request_id="+u)
	})
	// Random bytes in standard and URL-safe base64, short and long, wrapped or not.
	add("base64", func() string {
		b := f.bytes(8 + f.r.IntN(300))
		std, raw := base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)
		return f.oneOf(std, raw, "data: "+std, `{"blob":"`+std+`"}`, wrap(std, 76), "integrity sha512-"+std, "data:image/png;base64,"+std)
	})
	// Base64url JSON that is not a JWT: no "alg" in the header, two parts only, or
	// "alg" only inside a string value.
	add("base64-json", func() string {
		enc := base64.RawURLEncoding.EncodeToString
		js := func(v any) string { b, _ := json.Marshal(v); return enc(b) }
		claims := js(map[string]any{"user": f.pick(alnum, 8), "n": f.r.IntN(1000)})
		sig := enc(f.bytes(32))
		return f.oneOf(
			js(map[string]any{"typ": "JWT", "kid": f.pick(alnum, 8)})+"."+claims+"."+sig,
			js(map[string]any{"note": `the "alg" member`})+"."+claims+"."+sig,
			js(map[string]any{"alg": "HS256"})+"."+claims,
			claims+"."+claims+"."+sig,
			"eyJ"+f.pick(alnum, 30)+"."+f.pick(alnum, 20)+"."+f.pick(alnum, 20),
		)
	})
	// Telephone numbers of several countries and formats.
	add("phone", func() string {
		d := f.digits
		return f.oneOf("+1 ("+d(3)+") "+d(3)+"-"+d(4), "+1"+d(10), "+44 20 "+d(4)+" "+d(4), "+49 30 "+d(8), "+91 9"+d(4)+" "+d(5),
			"0049 30 "+d(7), "("+d(3)+") "+d(3)+"-"+d(4), "+33 6 "+d(2)+" "+d(2)+" "+d(2)+" "+d(2), "tel:+4"+d(12))
	})
	// ISBN-10 and ISBN-13 with valid check digits, with and without hyphens.
	add("isbn", func() string {
		d := "978" + f.digits(9)
		sum := 0
		for i, c := range d {
			w := 1
			if i%2 == 1 {
				w = 3
			}
			sum += w * int(c-'0')
		}
		isbn := d + strconv.Itoa((10-sum%10)%10)
		return f.oneOf("ISBN "+isbn, "ISBN "+isbn[:3]+"-"+isbn[3:4]+"-"+isbn[4:7]+"-"+isbn[7:12]+"-"+isbn[12:], "isbn: "+f.digits(9)+"X")
	})
	// Order, invoice, ticket and tracking numbers.
	add("order", func() string {
		d := f.digits
		return f.oneOf("Order "+d(3)+"-"+d(7)+"-"+d(7), "ORD-2024-"+d(6), "#"+d(9), "PO "+d(10), "INV-2024-05-"+d(4),
			"Ticket JIRA-"+d(5), "1Z"+f.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 16), "9400"+d(18))
	})
	// Timestamps: Unix seconds to nanoseconds (all start with 1 until 2033), RFC 3339,
	// compact forms.
	add("timestamp", func() string {
		s := 1600000000 + f.r.IntN(200000000)
		return f.oneOf(strconv.Itoa(s), strconv.Itoa(s)+f.digits(3), strconv.Itoa(s)+f.digits(6), strconv.Itoa(s)+f.digits(9),
			fmt.Sprintf("2024-%02d-%02dT%02d:%02d:%02d.%03dZ", 1+f.r.IntN(12), 1+f.r.IntN(28), f.r.IntN(24), f.r.IntN(60), f.r.IntN(60), f.r.IntN(1000)),
			"20240501"+f.digits(6), `{"ts":`+strconv.Itoa(s)+f.digits(3)+`}`)
	})
	// Digit runs of card length with a card network's prefix whose Luhn digit is wrong.
	add("luhn-fail", func() string {
		c := []byte(strings.NewReplacer(" ", "", "-", "").Replace(f.card()))
		last := len(c) - 1
		c[last] = '0' + (c[last]-'0'+1+byte(f.r.IntN(9)))%10
		s := string(c)
		return f.oneOf(s, "ref "+s, s[:4]+" "+s[4:8]+" "+s[8:12]+" "+s[12:], `{"n":`+s+`}`)
	})
	// Luhn-valid numbers of card length with no network's prefix.
	add("no-issuer", func() string {
		d := []byte(f.oneOf("0", "1", "7", "8", "9") + f.digits(13+f.r.IntN(4)))
		d = append(d, luhnDigit(d))
		return f.oneOf(string(d), "id="+string(d))
	})
	// Decimal numbers with long fractions, which hold long digit runs.
	add("decimal", func() string {
		return f.oneOf("0."+f.digits(16), "-12."+f.digits(15), "1."+f.digits(16)+"e+20", "["+"0."+f.digits(17)+", 3."+f.digits(16)+"]", "1,"+f.digits(16))
	})
	// URLs without a password: a user only, ports, IPv6, '@' and ':' in paths and
	// queries, scp-style Git remotes.
	add("url", func() string {
		h := f.oneOf("example.com", "api.example.org", "10.0.0.5", "[2001:db8::1]")
		return f.oneOf("https://"+h+"/path?q=1&token_type=bearer", "https://alice@"+h+"/", "ssh://git@"+h+":22/acme/app.git",
			"git@github.com:acme/app.git", "https://"+h+":8443/a/b;c=d", "https://"+h+"/@user:name/profile", "https://"+h+"/a:b@c",
			"http://"+h+"/search?q=user:pass@host", "postgres://"+h+":5432/db", "mongodb://"+h+"/test?authSource=admin",
			"https://"+h+"/reset?password_reset=1")
	})
	// E-mail addresses.
	add("email", func() string {
		u := f.pick("abcdefghijklmnopqrstuvwxyz", 5+f.r.IntN(6))
		return f.oneOf(u+"@example.com", "first."+u+"+tag@example.co.uk", "mailto:"+u+"@example.org", "From: "+u+" <"+u+"@example.net>")
	})
	// Placeholders and test-mode values of token formats, and tokens whose checksum
	// fails (a random 36-character body passes GitHub's CRC-32 with odds of 1 in 2^32).
	add("fake-token", func() string {
		return f.oneOf("AKIA"+strings.Repeat("X", 16), "sk_"+"test_"+f.pick(alnum, 24), "ghp_"+f.pick(alnum, 36), "npm_"+f.pick(alnum, 36),
			"gh"+"s_"+f.pick(alnum, 36), "sk-"+f.pick("abcdefghijklmnopqrstuvwxyz-", 40), "xoxb-"+strings.Repeat("X", 30), "sk-"+f.pick(hexSet, 32))
	})
	// Case variants of case-sensitive formats: a case-mangled token is not a credential.
	add("case-variant", func() string {
		return f.oneOf(strings.ToLower(f.secret(AWSAccessKey)), strings.ToUpper(f.secret(GitHubToken)), strings.ToUpper(f.secret(StripeKey)),
			strings.ToUpper(f.secret(JWT)), strings.ToUpper(f.secret(SlackToken)), strings.ToLower(f.secret(TwilioKey)[:2])+f.secret(TwilioKey)[2:])
	})
	// Public material: certificates, public keys, SSH public keys.
	add("public-key", func() string {
		body := wrap(base64.StdEncoding.EncodeToString(f.bytes(600)), 64)
		return f.oneOf("-----BEGIN CERTIFICATE-----\n"+body+"\n-----END CERTIFICATE-----", "-----BEGIN PUBLIC KEY-----\n"+body+"\n-----END PUBLIC KEY-----",
			"ssh-rsa AAAAB3NzaC1yc2E"+base64.StdEncoding.EncodeToString(f.bytes(270))+" alice@laptop",
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"+base64.StdEncoding.EncodeToString(f.bytes(32))[1:]+" deploy@ci")
	})
	// Hex data: hexdumps, MAC and IPv6 addresses, object ids.
	add("hex", func() string {
		return f.oneOf(hexdump(f.bytes(64)), strings.ToUpper(f.pick(hexSet, 2))+":"+f.pick(hexSet, 2)+":"+f.pick(hexSet, 2)+":"+f.pick(hexSet, 2)+":"+f.pick(hexSet, 2)+":"+f.pick(hexSet, 2),
			"2001:db8:"+f.pick(hexSet, 4)+"::"+f.pick(hexSet, 4), `ObjectId("`+f.pick(hexSet, 24)+`")`, "0x"+f.pick(hexSet, 40), "SK"+f.pick("ABCDEF0123456789", 32))
	})
	// AWS identifiers that are not secrets: ARNs, account ids, user and role ids.
	add("aws-id", func() string {
		return f.oneOf("arn:aws:iam::"+f.digits(12)+":role/Admin", "account "+f.digits(12), "AIDA"+f.pick(base32Set, 16), "AROA"+f.pick(base32Set, 16),
			"x-amz-request-id: "+strings.ToUpper(f.pick(hexSet, 16)), "arn:aws:s3:::acme-"+f.digits(6)+"/*")
	})
	// Entries named like secrets whose values are not secrets.
	add("config", func() string {
		return f.oneOf("password: "+f.oneOf("string", "null", "${DB_PASSWORD}", "!vault |", `""`, "'{{ pw }}'", "<password>"),
			"  password: user.password,", "password = get_password()", "TOKEN_TTL="+f.digits(4), `"max_tokens": `+f.digits(4),
			`"nextPageToken": "`+base64.StdEncoding.EncodeToString(f.bytes(30))+`"`, `"progressToken": "`+f.pick(alnum, 16)+`"`,
			"connect(host=h, password=pw, port=5432)", "Password: ********", "the password: is required", "password=None", "api_key=os.getenv(\"API_KEY\")")
	})
	return out
}

func hexdump(b []byte) string {
	var s strings.Builder
	for off := 0; off < len(b); off += 16 {
		fmt.Fprintf(&s, "%08x  %s\n", off, hex.EncodeToString(b[off:min(len(b), off+16)]))
	}
	return s.String()
}

// bulkNegative makes about n bytes of ordinary text: the committed negative texts in a
// shuffled order, interleaved with generated negatives.
func bulkNegative(f *faker, n int) string {
	files, _ := filepath.Glob("testdata/negatives/*.txt")
	var blocks []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			panic(err)
		}
		for b := range strings.SplitSeq(string(data), "\n\n") {
			blocks = append(blocks, b)
		}
	}
	gen := generatedNegatives(f)
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(blocks[f.r.IntN(len(blocks))])
		b.WriteString("\n\n")
		for range 3 {
			b.WriteString(gen[f.r.IntN(len(gen))].text)
			b.WriteString(f.oneOf(" ", "\n", ". ", ", "))
		}
	}
	return b.String()
}

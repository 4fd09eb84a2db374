package dlp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// at returns the finding of kind k on the first occurrence of sub in s, or fails.
func span(t *testing.T, k Kind, s, sub string) Finding {
	t.Helper()
	i := strings.Index(s, sub)
	if i < 0 {
		t.Fatalf("test setup: %q not in %q", sub, s)
	}
	return Finding{Kind: k, Start: i, End: i + len(sub)}
}

// scanCase is one input and what Scan must report for it, as (kind, substring) pairs;
// a substring stands for its first occurrence in the input.
type scanCase struct {
	name string
	in   string
	want []kv
}

type kv struct {
	k   Kind
	sub string
}

func runScanCases(t *testing.T, tests []scanCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []Finding
			for _, w := range tc.want {
				want = append(want, span(t, w.k, tc.in, w.sub))
			}
			got := Scan(tc.in, nil)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Scan(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestScanTokens(t *testing.T) {
	f := newFaker(10)
	gh := f.secret(GitHubToken)
	for strings.HasPrefix(gh, "github") {
		gh = f.secret(GitHubToken)
	}
	npm := f.secret(NPMToken)
	aws := "AKIA" + f.pick(base32Set, 16)
	stripe := "sk_" + "live_" + f.pick(alnum, 40)
	openai := "sk-" + f.pick(alnum, 20) + "T3Blbk" + "FJ" + f.pick(alnum, 20)
	ant := f.secret(AnthropicKey)
	slack := f.secret(SlackToken)
	flip := func(s string) string { // change the last character: the checksum fails
		c := byte('A')
		if s[len(s)-1] == 'A' {
			c = 'B'
		}
		return s[:len(s)-1] + string(c)
	}
	runScanCases(t, []scanCase{
		{name: "whole string", in: gh, want: []kv{{GitHubToken, gh}}},
		{name: "start of string", in: gh + " is mine", want: []kv{{GitHubToken, gh}}},
		{name: "end of string", in: "mine is " + gh, want: []kv{{GitHubToken, gh}}},
		{name: "punctuation around", in: "(" + gh + ").", want: []kv{{GitHubToken, gh}}},
		{name: "quoted in JSON", in: `{"t":"` + gh + `"}`, want: []kv{{GitHubToken, gh}}},
		{name: "word before", in: "x" + gh},
		{name: "underscore before", in: "_" + gh},
		{name: "word after (37 characters)", in: gh + "x"},
		{name: "checksum fails", in: flip(gh)},
		{name: "npm checksum", in: "//registry.npmjs.org/:_authToken=" + npm, want: []kv{{NPMToken, npm}}},
		{name: "npm checksum fails", in: flip(npm)},
		{name: "upper-cased GitHub token", in: strings.ToUpper(gh)},
		{name: "lower-cased AWS key id", in: strings.ToLower(aws)},
		{name: "AWS key id", in: "id=" + aws + ";", want: []kv{{AWSAccessKey, aws}}},
		{name: "AWS key id outside base32", in: "AKIA" + "0123456789ABCDEF"},
		{name: "AWS key id, 21 characters", in: aws + "Q"},
		{name: "AWS documentation example", in: "AKIA" + "IOSFODNN7EXAMPLE"},
		{name: "AWS placeholder", in: "AKIA" + strings.Repeat("X", 16)},
		{name: "AWS user id is not a key", in: "AIDA" + f.pick(base32Set, 16)},
		{name: "Stripe live key", in: "STRIPE_KEY=" + stripe, want: []kv{{StripeKey, stripe}}},
		{name: "Stripe test key", in: "sk_" + "test_" + f.pick(alnum, 40)},
		{name: "Stripe key upper-cased", in: strings.ToUpper(stripe)},
		{name: "OpenAI legacy key", in: "key: " + openai, want: []kv{{OpenAIKey, openai}}},
		{name: "sk- kebab identifier", in: "sk-some-long-identifier-for-a-kubernetes-deployment"},
		{name: "sk- lower-case hex", in: "sk-" + f.pick(hexSet, 48)},
		{name: "sk-... placeholder", in: "OPENAI_API_KEY=sk-..."},
		{name: "Anthropic key is not also an OpenAI key", in: ant, want: []kv{{AnthropicKey, ant}}},
		{name: "Slack token", in: "token " + slack + ".", want: []kv{{SlackToken, slack}}},
		{name: "Slack placeholder", in: "xoxb-your-bot-token-here-please"},
		{name: "two tokens, one separator", in: gh + "," + aws, want: []kv{{GitHubToken, gh}, {AWSAccessKey, aws}}},
	})
}

func TestScanPrivateKeys(t *testing.T) {
	f := newFaker(11)
	rsa := f.pem("RSA PRIVATE KEY", 600, 64)
	ec := f.pem("EC PRIVATE KEY", 121, 64)
	body := rsa[len("-----BEGIN RSA PRIVATE KEY-----\n") : len(rsa)-len("\n-----END RSA PRIVATE KEY-----")]
	truncated := "-----BEGIN RSA PRIVATE KEY-----\n" + body[:200]
	lowered := strings.Replace(strings.Replace(rsa, "BEGIN RSA PRIVATE KEY", "begin rsa private key", 1), "END RSA", "end rsa", 1)
	escaped := strings.ReplaceAll(rsa, "\n", `\n`)
	cert := "-----BEGIN CERTIFICATE-----\n" + body + "\n-----END CERTIFICATE-----"
	runScanCases(t, []scanCase{
		{name: "block", in: "key:\n" + rsa + "\nend", want: []kv{{PrivateKey, rsa}}},
		{name: "no END line", in: `"` + truncated + `"`, want: []kv{{PrivateKey, truncated}}},
		{name: "lower-case header", in: lowered, want: []kv{{PrivateKey, lowered}}},
		{name: "escaped in JSON", in: `{"k":"` + escaped + `\n"}`, want: []kv{{PrivateKey, escaped}}},
		{name: "service account", in: `{"private_key": "` + escaped + `\n"}`, want: []kv{{GCPServiceAccount, escaped}, {PrivateKey, escaped}}},
		{name: "certificate", in: cert},
		{name: "public key", in: strings.ReplaceAll(cert, "CERTIFICATE", "PUBLIC KEY")},
		{name: "placeholder body", in: "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----"},
		{name: "header alone", in: "-----BEGIN OPENSSH PRIVATE KEY-----"},
		{name: "END of another block is not ours", in: "-----BEGIN RSA PRIVATE KEY-----\n<paste here>\n" + cert},
		{name: "two blocks", in: rsa + "\n" + ec, want: []kv{{PrivateKey, rsa}, {PrivateKey, ec}}},
	})
}

func TestScanJWT(t *testing.T) {
	b64 := func(s string) string {
		const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		var out []byte
		for i := 0; i < len(s); i += 3 {
			var v uint32
			n := min(3, len(s)-i)
			for k := 0; k < 3; k++ {
				v <<= 8
				if k < n {
					v |= uint32(s[i+k])
				}
			}
			for k := 0; k < n+1; k++ {
				out = append(out, set[(v>>(18-6*k))&63])
			}
		}
		return string(out)
	}
	payload := b64(`{"sub":"42","iat":1700000000}`)
	sig := b64("0123456789abcdef0123456789abcdef")
	hs := b64(`{"alg":"HS256","typ":"JWT"}`) + "." + payload + "." + sig
	none := b64(`{"alg":"none"}`) + "." + payload + "."
	unsigned := b64(`{"alg":"HS256"}`) + "." + payload + "."
	noAlg := b64(`{"typ":"JWT"}`) + "." + payload + "." + sig
	jwe := b64(`{"alg":"dir","enc":"A256GCM"}`) + ".." + b64("123456789012") + "." + payload + "." + b64("0123456789abcdef")
	algInString := b64(`{"note":"\"alg\" here"}`) + "." + payload + "." + sig
	runScanCases(t, []scanCase{
		{name: "HS256", in: "Bearer " + hs, want: []kv{{JWT, hs}}},
		{name: "at the end of a sentence", in: "token " + hs + ".", want: []kv{{JWT, hs}}},
		{name: "alg none, empty signature", in: none + " ok", want: []kv{{JWT, none}}},
		{name: "empty signature needs alg none", in: unsigned + " ok"},
		{name: "no alg", in: noAlg},
		{name: "alg only inside a string", in: algInString},
		{name: "two parts", in: b64(`{"alg":"HS256"}`) + "." + payload},
		{name: "JWE with an empty key part", in: jwe, want: []kv{{JWT, jwe}}},
		{name: "header preceded by a word", in: "x" + hs},
		{name: "upper-cased", in: strings.ToUpper(hs)},
	})
}

func TestScanCards(t *testing.T) {
	visa := "4111111111111111"
	runScanCases(t, []scanCase{
		{name: "contiguous", in: "card " + visa, want: []kv{{Card, visa}}},
		{name: "spaced", in: "card 4111 1111 1111 1111 ok", want: []kv{{Card, "4111 1111 1111 1111"}}},
		{name: "dashed", in: "4111-1111-1111-1111", want: []kv{{Card, "4111-1111-1111-1111"}}},
		{name: "Amex 4-6-5", in: "3782 822463 10005", want: []kv{{Card, "3782 822463 10005"}}},
		{name: "Diners 4-6-4", in: "3056 930902 5904", want: []kv{{Card, "3056 930902 5904"}}},
		{name: "JSON number", in: `{"pan":5555555555554444}`, want: []kv{{Card, "5555555555554444"}}},
		{name: "with expiry after", in: "4111 1111 1111 1111 12/27", want: []kv{{Card, "4111 1111 1111 1111"}}},
		{name: "contiguous, numbers after", in: visa + " 12 2027", want: []kv{{Card, visa}}},
		{name: "Luhn fails", in: "4111111111111112"},
		{name: "no issuer", in: "1111111111111117"},
		{name: "Visa of 15 digits", in: "411111111111116"},
		{name: "mixed separators", in: "4111 1111-1111 1111"},
		{name: "double space", in: "4111  1111 1111 1111"},
		{name: "bad grouping", in: "41 111111 11111111"},
		{name: "too long a run", in: "4111 1111 1111 1111 1111 1111"},
		{name: "decimal fraction", in: "0." + visa},
		{name: "decimal integer part", in: visa + ".5"},
		{name: "comma-grouped number", in: "1," + visa},
		{name: "negative number", in: "-" + visa},
		{name: "phone-like", in: "+" + visa},
		{name: "letter before", in: "A" + visa},
		{name: "letter after", in: visa + "b"},
		{name: "masked", in: "**** **** **** 1111"},
	})
}

func TestScanPasswords(t *testing.T) {
	runScanCases(t, []scanCase{
		{name: "https", in: "https://alice:s3cret!@example.com/", want: []kv{{URLPassword, "s3cret!"}}},
		{name: "postgres", in: "postgres://app:Pa55word@db:5432/x", want: []kv{{ConnPassword, "Pa55word"}}},
		{name: "scheme in upper case", in: "POSTGRES://app:Pa55word@db/x", want: []kv{{ConnPassword, "Pa55word"}}},
		{name: "mongodb+srv", in: "mongodb+srv://u:Zx9pQ2w@c0.mongodb.net/", want: []kv{{ConnPassword, "Zx9pQ2w"}}},
		{name: "redis without a user", in: "redis://:Zx9pQ2w@cache:6379", want: []kv{{ConnPassword, "Zx9pQ2w"}}},
		{name: "percent-encoded password", in: "https://bob:p%40ss%2Fw0rd@host/", want: []kv{{URLPassword, "p%40ss%2Fw0rd"}}},
		{name: "raw @ in password, last @ wins", in: "https://bob:p@ss@host/", want: []kv{{URLPassword, "p@ss"}}},
		{name: "@ in user name", in: "https://bob@corp.com:Zx9pQ2w@host/", want: []kv{{URLPassword, "Zx9pQ2w"}}},
		{name: "percent-encoded URL", in: "next=https%3A%2F%2Fbob%3AZx9pQ2w%40host%2Fhome", want: []kv{{URLPassword, "Zx9pQ2w"}}},
		{name: "percent-encoded URL, lower-case hex", in: "next=https%3a%2f%2fbob%3aZx9pQ2w%40host", want: []kv{{URLPassword, "Zx9pQ2w"}}},
		{name: "JSON-escaped slashes", in: `"http:\/\/u:Zx9pQ2w@h\/p"`, want: []kv{{URLPassword, "Zx9pQ2w"}}},
		{name: "query parameter", in: "https://h/login?user=a&password=Zx9pQ2w&x=1", want: []kv{{URLPassword, "Zx9pQ2w"}}},
		{name: "JDBC query parameter", in: "jdbc:mysql://h/db?user=a&password=Zx9pQ2w", want: []kv{{ConnPassword, "Zx9pQ2w"}}},
		{name: "ADO.NET", in: "Server=s;User Id=u;Password=Zx9 pQ2w;", want: []kv{{ConnPassword, "Zx9 pQ2w"}}},
		{name: "ADO.NET quoted", in: "Server=s;Password='Zx9;pQ2w';", want: []kv{{ConnPassword, "Zx9;pQ2w"}}},
		{name: "ODBC braces", in: "Driver={x};Pwd={Zx9;pQ2w};", want: []kv{{ConnPassword, "Zx9;pQ2w"}}},
		{name: "key in upper case", in: "SERVER=s;PASSWORD=Zx9pQ2w", want: []kv{{ConnPassword, "Zx9pQ2w"}}},
		{name: "libpq", in: "host=h dbname=d user=u password=Zx9pQ2w", want: []kv{{ConnPassword, "Zx9pQ2w"}}},
		{name: "password starts with an escape", in: "https://u:%21abc123@h/", want: []kv{{URLPassword, "%21abc123"}}},
		{name: "password starts with '!'", in: "postgres://u:!Qaz2wsx@h/d", want: []kv{{ConnPassword, "!Qaz2wsx"}}},
		{name: "user only", in: "https://alice@example.com/"},
		{name: "host and port", in: "https://example.com:8443/a:b@c"},
		{name: "scp remote", in: "git@github.com:acme/app.git"},
		{name: "placeholder password", in: "postgres://user:password@localhost/db"},
		{name: "template password", in: "postgres://u:${PG_PASSWORD}@db/x"},
		{name: "redacted password", in: "postgres://u:[REDACTED:conn.password]@db/x"},
		{name: "keyword argument", in: "connect(host=h, password=pw, port=5432)"},
		{name: "statement", in: "const password = 'Zx9pQ2w';"},
		{name: "working directory in a sudo log", in: "TTY=pts/0 ; PWD=/home/deploy ; USER=root"},
	})
}

func TestScanConfig(t *testing.T) {
	runScanCases(t, []scanCase{
		{name: "env", in: "DB_PASSWORD=Zx9pQ2wL", want: []kv{{ConfigSecret, "Zx9pQ2wL"}}},
		{name: "export, quoted", in: `export API_SECRET="Zx9 pQ2wL"`, want: []kv{{ConfigSecret, "Zx9 pQ2wL"}}},
		{name: "YAML", in: "db:\n  password: Zx9pQ2wL\n", want: []kv{{ConfigSecret, "Zx9pQ2wL"}}},
		{name: "YAML list", in: "env:\n  - MYSQL_ROOT_PASSWORD=Zx9pQ2wL", want: []kv{{ConfigSecret, "Zx9pQ2wL"}}},
		{name: "JSON", in: `{"client_secret":"Zx9pQ2wL"}`, want: []kv{{ConfigSecret, "Zx9pQ2wL"}}},
		{name: "escaped JSON", in: `"{\"password\":\"Zx9pQ2wL\"}"`, want: []kv{{ConfigSecret, "Zx9pQ2wL"}}},
		{name: "escaped quote inside", in: `{"password":"Zx9\"pQ2wL"}`, want: []kv{{ConfigSecret, `Zx9\"pQ2wL`}}},
		{name: "properties", in: "spring.datasource.password=Zx9pQ2wL", want: []kv{{ConfigSecret, "Zx9pQ2wL"}}},
		{name: "AWS secret by name", in: "aws_secret_access_key = " + "wJalrXUtnFEMIK7MDENGbPxRfiCYzqQ8vT3kLm2n", want: []kv{{AWSSecretKey, "wJalrXUtnFEMIK7MDENGbPxRfiCYzqQ8vT3kLm2n"}}},
		{name: "token named value holding a format", in: "API_TOKEN=AKIA" + "QWERTYUIOPASDFGH", want: []kv{{AWSAccessKey, "AKIAQWERTYUIOPASDFGH"}}},
		{name: "Authorization", in: "Authorization: Bearer Zx9pQ2wLmN4", want: []kv{{HTTPAuth, "Zx9pQ2wLmN4"}}},
		{name: "Authorization, bare credential", in: `"authorization": "Zx9pQ2wLmN4vB7cX"`, want: []kv{{HTTPAuth, "Zx9pQ2wLmN4vB7cX"}}},
		{name: "type annotation", in: "  password: string;"},
		{name: "YAML tag", in: "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256"},
		{name: "format verb", in: `password = "%s"`},
		{name: "member access", in: "password: options.password"},
		{name: "identifier", in: "refresh_token: refreshToken"},
		{name: "assignment in code", in: "    password = self.password"},
		{name: "concatenation", in: `secret = "prefix-" + suffix`},
		{name: "pagination token", in: `"nextPageToken": "CiAKGjBpNDd2Nmp2Zml2cXRw"`},
		{name: "MCP progress token", in: `"progressToken": "Zx9pQ2wLmN4vB7cX"`},
		{name: "GitHub Actions permission", in: "permissions:\n  id-token: write"},
		{name: "package version", in: `"pbkdf2-password": "1.2.1"`},
		{name: "enum", in: `IETFToken = "ietf-token",`},
		{name: "path", in: "PWD=/home/alice"},
		{name: "prose", in: "Password: the one you chose at sign-up"},
		{name: "Authorization placeholder", in: "Authorization: Bearer $TOKEN"},
	})
}

func TestScanCloud(t *testing.T) {
	f := newFaker(12)
	key := f.secret(AzureAccountKey)
	sig := f.secret(AzureSAS)
	akid := "AKIA" + f.pick(base32Set, 16)
	secret := f.secret(AWSSecretKey)
	sha := f.pick(hexSet, 40)
	runScanCases(t, []scanCase{
		{name: "Azure connection string", in: "AccountName=a;AccountKey=" + key + ";EndpointSuffix=core.windows.net", want: []kv{{AzureAccountKey, key}}},
		{name: "Azure SAS", in: "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=" + sig, want: []kv{{AzureSAS, sig}}},
		{name: "sig without sv", in: "https://example.com/x?sig=" + sig},
		{name: "AWS secret near the key id", in: akid + " " + secret, want: []kv{{AWSAccessKey, akid}, {AWSSecretKey, secret}}},
		{name: "AWS secret before the key id", in: secret + "\n" + akid, want: []kv{{AWSSecretKey, secret}, {AWSAccessKey, akid}}},
		{name: "git SHA near a key id", in: akid + " " + sha, want: []kv{{AWSAccessKey, akid}}},
		{name: "40 characters far from any key id", in: akid + strings.Repeat(" ", 300) + secret, want: []kv{{AWSAccessKey, akid}}},
	})
}

// TestScanInvisible checks tokens split by invisible characters: the finding covers
// the whole token with the characters in it.
func TestScanInvisible(t *testing.T) {
	f := newFaker(13)
	gh := withChecksum("ghp_", f.pick(alnum, 30))
	for _, tc := range []struct {
		name, sep string
	}{
		{"zero-width space", "\u200b"},
		{"zero-width joiner", "\u200d"},
		{"word joiner", "\u2060"},
		{"byte-order mark", "\ufeff"},
		{"soft hyphen", "\u00ad"},
		{"bidi isolate", "\u2066"},
		{"two kinds", "\u200b\u200c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			split := gh[:2] + tc.sep + gh[2:10] + tc.sep + gh[10:]
			in := "token " + split + " end"
			got := Scan(in, nil)
			want := []Finding{span(t, GitHubToken, in, split)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Scan (-want +got):\n%s", diff)
			}
			if r := Redact(in, got); strings.Contains(r, gh[10:]) || r != "token [REDACTED:github.token] end" {
				t.Errorf("Redact = %q", r)
			}
		})
	}
	card := "4111\u200b 1111 1111 1111"
	if got := Scan(card, nil); len(got) != 1 || got[0].Kind != Card || got[0].End != len(card) {
		t.Errorf("Scan(%q) = %v, want the card", card, got)
	}
	if got := Scan("just\u200b text\ufeff here", nil); len(got) != 0 {
		t.Errorf("invisible characters alone: %v", got)
	}
}

// TestScanInvalidUTF8 checks that bytes which are not UTF-8 neither hide a token nor
// bend a span off a rune boundary.
func TestScanInvalidUTF8(t *testing.T) {
	f := newFaker(14)
	gh := withChecksum("ghp_", f.pick(alnum, 30))
	for _, in := range []string{
		"\xff" + gh + "\xfe",
		"\xe2\x80" + gh,
		gh + "\xc3",
		"\xed\xa0\x80" + gh + "\xf0\x9f",
	} {
		got := Scan(in, nil)
		if len(got) != 1 || in[got[0].Start:got[0].End] != gh {
			t.Errorf("Scan(%q) = %v, want the token alone", in, got)
		}
		if r := Redact(in, got); strings.Contains(r, gh) {
			t.Errorf("Redact(%q) = %q keeps the token", in, r)
		}
	}
}

func TestScanAppends(t *testing.T) {
	prev := []Finding{{Kind: JWT, Start: 100, End: 200}}
	got := Scan("card 4111111111111111", prev)
	want := []Finding{{Kind: JWT, Start: 100, End: 200}, {Kind: Card, Start: 5, End: 21}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Scan appended (-want +got):\n%s", diff)
	}
}

func TestScanNoAllocation(t *testing.T) {
	text := strings.Repeat("An ordinary sentence, with numbers (12, 3.5) and a URL https://example.com/a?b=c; key: value.\n", 20)
	dst := make([]Finding, 0, 4)
	if n := testing.AllocsPerRun(20, func() { dst = Scan(text, dst[:0]) }); n != 0 {
		t.Errorf("Scan of ordinary text allocates %v times", n)
	}
}

// TestScanLinear feeds inputs built to make a careless matcher quadratic. Each is
// megabytes long: a quadratic pass would not finish within the test timeout.
func TestScanLinear(t *testing.T) {
	const n = 1 << 20
	rep := func(s string) string { return strings.Repeat(s, n/len(s)+1)[:n] }
	for _, in := range []string{
		rep("AKIA"), rep("ghp_"), rep("eyJhbGciOiJub25lIn0."), rep("eyJ"), rep("a."),
		rep("-----BEGIN PRIVATE KEY-----\n"), rep("-----BEGIN PRIVATE KEY-----\nMIIE"),
		"-----BEGIN PRIVATE KEY-----\n" + rep("A"), rep("password="), rep("Password=x "),
		rep("password: \""), rep(`\"password\":\"`), rep("://"), rep("a://b:c"), rep("%3A%2F%2F"),
		rep("4111 "), rep("4-"), rep("1"), rep("="), rep(":"), rep("sk-"), "sk-" + rep("a"),
		rep("glpat-"), rep("xoxb-1"), rep("hooks.slack.com/"), rep("Authorization: "),
		rep("sig=&sv="), rep("host= password="), rep("\u200b"), rep("a\u200bb"), rep("AccountKey="),
		"AKIA" + rep("QWERTYUIOPASDFGH AKIA"), rep("+/"), rep("export A_TOKEN="),
		rep(`password: "a\"`), rep(`{"password":"x\"`), rep("Authorization: Bearer "), rep("https://a:b@"),
		rep("-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("A", 50) + "\n"), rep("x=Password=a;"),
	} {
		Scan(in, nil)
	}
}

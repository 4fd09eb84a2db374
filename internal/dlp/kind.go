package dlp

import "slices"

// Kind names what a [Finding] found. Kind names are stable: they appear in config files
// (see [ParseActions]) and in the audit chain, so a kind is never renamed, only added.
type Kind string

// The kinds Scan reports. A family prefix (aws., github., ...) names the issuer; the
// kinds without one are formats that any issuer uses.
const (
	// AWSAccessKey is an AWS access key id: AKIA (long-term), ASIA (temporary), ABIA
	// or ACCA followed by 16 base32 characters.
	AWSAccessKey Kind = "aws.access_key"
	// AWSSecretKey is a 40-character AWS secret access key, recognised next to an access
	// key id or after a key named like aws_secret_access_key or SecretAccessKey.
	AWSSecretKey Kind = "aws.secret_key"
	// AzureAccountKey is the key of an AccountKey= or SharedAccessKey= pair in an Azure
	// storage, Service Bus or Event Hubs connection string.
	AzureAccountKey Kind = "azure.account_key"
	// AzureSAS is the sig= signature of an Azure shared access signature URL (one whose
	// query also has sv=).
	AzureSAS Kind = "azure.sas"
	// GCPServiceAccount is the private key of a Google Cloud service-account key file: a
	// PEM block as the value of a "private_key" JSON member. The same span is also
	// reported as [PrivateKey].
	GCPServiceAccount Kind = "gcp.service_account"
	// GoogleAPIKey is a Google API key: AIza followed by 35 characters.
	GoogleAPIKey Kind = "google.api_key"
	// GoogleOAuth is a Google OAuth access token (ya29.) or client secret (GOCSPX-).
	GoogleOAuth Kind = "google.oauth"
	// GitHubToken is a GitHub token: ghp_, gho_, ghu_, ghs_ or ghr_ with a valid CRC-32
	// checksum, or a fine-grained github_pat_ token.
	GitHubToken Kind = "github.token"
	// GitLabToken is a GitLab personal, project, deploy, trigger or runner token
	// (glpat-, gldt-, glptt-, glrt-).
	GitLabToken Kind = "gitlab.token"
	// SlackToken is a Slack bot, user, app or configuration token (xoxb-, xoxp-, xoxa-,
	// xoxr-, xoxs-, xoxo-, xapp-).
	SlackToken Kind = "slack.token"
	// SlackWebhook is the secret path of a Slack incoming-webhook URL
	// (hooks.slack.com/services/... or /workflows/...).
	SlackWebhook Kind = "slack.webhook"
	// StripeKey is a live Stripe secret or restricted key (sk_live_, rk_live_). Test-mode
	// keys are not reported.
	StripeKey Kind = "stripe.key"
	// OpenAIKey is an OpenAI API key (sk-proj-, sk-svcacct-, sk-admin- or a legacy sk-
	// key), or another sk- key of 32 characters or more in mixed case with digits.
	OpenAIKey Kind = "openai.key"
	// AnthropicKey is an Anthropic API key (sk-ant-).
	AnthropicKey Kind = "anthropic.key"
	// NPMToken is an npm access token: npm_ with a valid CRC-32 checksum.
	NPMToken Kind = "npm.token"
	// PyPIToken is a PyPI or TestPyPI upload token (a pypi- macaroon).
	PyPIToken Kind = "pypi.token"
	// TwilioKey is a Twilio API key SID: SK followed by 32 hex digits.
	TwilioKey Kind = "twilio.key"
	// SendGridKey is a SendGrid API key: SG. with two base64url parts.
	SendGridKey Kind = "sendgrid.key"
	// PrivateKey is a PEM or armored private key block, from its -----BEGIN line to its
	// -----END line (or, when the end is missing, to the end of the key material):
	// PKCS#1 RSA, EC, DSA, PKCS#8 (plain and encrypted), OpenSSH and PGP.
	PrivateKey Kind = "private_key"
	// JWT is a JSON Web Token (JWS, or JWE with five parts) whose header decodes to a
	// JSON object with an "alg" member.
	JWT Kind = "jwt"
	// Card is a payment card number: 13 to 19 digits, contiguous or grouped by single
	// spaces or dashes, in a known issuer range, with a valid Luhn check digit.
	Card Kind = "card"
	// URLPassword is the password in a URL's user information (scheme://user:pass@host)
	// or in a password= query parameter, for schemes other than databases and brokers.
	URLPassword Kind = "url.password"
	// ConnPassword is the password of a database or broker connection string: in the URL
	// form (postgres://, mysql://, mongodb+srv://, redis://, amqp://, jdbc:...) or as a
	// Password=, Pwd= or password= pair (ADO.NET, ODBC, JDBC, libpq).
	ConnPassword Kind = "conn.password"
	// HTTPAuth is the credential of an HTTP Authorization header (Bearer, Basic, token,
	// ...).
	HTTPAuth Kind = "http.auth"
	// ConfigSecret is the value of a configuration entry named like a secret: an env
	// file line (DB_PASSWORD=..., export API_TOKEN=...) or a YAML, JSON, TOML or INI
	// entry whose key is password, secret, api_key, access_token and the like.
	ConfigSecret Kind = "config.secret"
)

// kinds is every Kind Scan can report, sorted.
var kinds = func() []Kind {
	ks := []Kind{
		AWSAccessKey, AWSSecretKey, AzureAccountKey, AzureSAS, GCPServiceAccount,
		GoogleAPIKey, GoogleOAuth, GitHubToken, GitLabToken, SlackToken, SlackWebhook,
		StripeKey, OpenAIKey, AnthropicKey, NPMToken, PyPIToken, TwilioKey, SendGridKey,
		PrivateKey, JWT, Card, URLPassword, ConnPassword, HTTPAuth, ConfigSecret,
	}
	slices.Sort(ks)
	return ks
}()

// Kinds returns every kind [Scan] can report, sorted by name. The caller may modify the
// returned slice.
func Kinds() []Kind { return slices.Clone(kinds) }

// Known reports whether k is one of [Kinds].
func (k Kind) Known() bool {
	_, ok := slices.BinarySearch(kinds, k)
	return ok
}

// generic reports whether k is a kind found from its context (a key name, a URL's
// user information) rather than from the secret's own format. A generic finding whose
// span holds a format finding is dropped (see Scan).
func (k Kind) generic() bool {
	switch k {
	case URLPassword, ConnPassword, HTTPAuth, ConfigSecret:
		return true
	}
	return false
}

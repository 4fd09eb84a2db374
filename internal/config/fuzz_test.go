package config

import (
	"strings"
	"testing"
)

// FuzzParse: no configuration file makes Parse panic, and one it accepts
// builds an engine (what aegis run does next) without error or panic.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"version: 1\npolicy: p.yaml\nservers: {}\n",
		"version: 1\nhome: /home/a\npolicy: p.yaml\nservers:\n  fs: {builtin: filesystem, local: true, hide_unallowed: true}\n",
		"version: 1\npolicy: p.yaml\nservers:\n  media: {max_message_bytes: 67108864, stderr_log_bytes: 1048576}\n",
		"version: 1\npolicy: p.yaml\nservers:\n  fs:\n    dlp: {arguments: {jwt: deny}, results: {default: redact}}\n    tools:\n      t: {caps: {per_turn: 2}, set: {/a: 1}, identity: {/owner: principal}}\n",
		"version: 1\npolicy: p.yaml\nservers:\n  web:\n    builtin: fetch\n    egress: {resolver: static, hosts: {example.com: [93.184.215.14]}}\n",
		"version: 1\npolicy: p.yaml\nservers: {}\nenvelopes: {enabled: false, retention: 7d}\nlimits: {max_bytes: 1024}\n",
	} {
		f.Add(seed)
	}
	read := func(name string) ([]byte, error) {
		if strings.HasSuffix(name, "p.yaml") {
			return []byte("version: 1\nrules:\n  - {id: a, effect: allow, tool: \"*\"}\n"), nil
		}
		return []byte("version: 1\ntools: {}\n"), nil
	}
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := Parse("c.yaml", []byte(data), read)
		if err != nil {
			return
		}
		if _, err := cfg.Engine(); err != nil {
			t.Fatalf("Parse accepted a configuration Engine refuses: %v\n%s", err, data)
		}
	})
}

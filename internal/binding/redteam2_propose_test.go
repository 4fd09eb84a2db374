package binding

import (
	"encoding/json"
	"testing"
)

// TestRedteamProposeCamelCase: argument names in camelCase or
// kebab-case, and ones that carry code, are resources all the same; a
// proposal that calls them "a value" binds nothing for the reviewer to see.
func TestRedteamProposeCamelCase(t *testing.T) {
	for _, k := range []string{"shellCommand", "commandLine", "cmdline", "argv", "code", "targetUrl", "repoURL", "filePath", "file-path", "outputDir", "hostName"} {
		_, why, ok := classify("s", "run", k, json.RawMessage(`{"type":"string"}`), true)
		if !ok {
			t.Errorf("%q: proposed as %s", k, why)
		}
	}
}

package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFileReach(t *testing.T) {
	const src = `version: 1
rules:
  - id: ssh
    effect: deny
    path_under: ["~/.ssh"]
  - id: etc-ro
    effect: deny
    capability: fs.write
    path_under: [/etc]
  - id: fs-projects
    effect: allow
    server: fs
    capability: [fs.read, fs.write]
    path_under: [/srv/projects, /srv/projects/a]
  - id: fs-docs-ask
    effect: ask
    server: "f*"
    role: [dev]
    capability: fs.read
    path_under: [/srv/docs]
    when: 'cap.path.endsWith(".md")'
  - id: secrets-for-interns
    effect: deny
    server: fs
    role: [intern]
    path_under: [/srv/projects/secret]
  - id: shadow-deny
    effect: deny
    mode: shadow
    path_under: [/srv/projects/shadowed]
  - id: tool-deny
    effect: deny
    tool: read_file
    capability: fs.read
    path_under: [/srv/tool-denied]
  - id: web-all
    effect: allow
    server: web
    capability: fs.read
  - id: web-tmp
    effect: allow
    server: web
    capability: fs.write
    path_under: [/tmp/web]
  - id: web-no-write
    effect: deny
    server: web
    capability: fs.write
  - id: action
    effect: allow
    server: fs
    tool: "*"
`
	set, err := Parse("p.yaml", []byte(src), &Options{Home: "/home/u"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		server string
		want   FileReach
	}{
		{"fs", FileReach{
			Read:        []string{"/srv/docs", "/srv/projects"},
			Write:       []string{"/srv/projects"},
			Masked:      []string{"/home/u/.ssh"},
			ReadOnly:    []string{"/etc"},
			Conditional: []string{"/srv/projects/secret", "/srv/tool-denied"},
		}},
		{"web", FileReach{
			Read:        []string{"/"},
			Masked:      []string{"/home/u/.ssh"},
			ReadOnly:    []string{"/etc"},
			Conditional: []string{"/srv/tool-denied"},
		}},
		{"other", FileReach{
			Masked:      []string{"/home/u/.ssh"},
			ReadOnly:    []string{"/etc"},
			Conditional: []string{"/srv/tool-denied"},
		}},
	} {
		t.Run(tc.server, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, set.FileReach(tc.server)); diff != "" {
				t.Errorf("FileReach(%q) (-want +got):\n%s", tc.server, diff)
			}
		})
	}
}

func TestTrees(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"empty", nil, nil},
		{"nested", []string{"/a/b", "/a", "/a-b", "/ab", "/a/b/c"}, []string{"/a", "/a-b", "/ab"}},
		{"root covers all", []string{"/x", "/", "/y"}, []string{"/"}},
		{"duplicates", []string{"/x", "/x"}, []string{"/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Trees(tc.in)); diff != "" {
				t.Errorf("Trees (-want +got):\n%s", diff)
			}
		})
	}
}

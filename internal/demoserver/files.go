package demoserver

// Files are the files of `aegis demo`, by path in its directory: a home
// with a project and a (fake) SSH key, the configuration (with @HOME@ for
// the home's path), a bindings file for the demo server, a policy, and a
// looser policy to recheck with.
var Files = map[string]string{
	"home/projects/notes.md": "Meeting notes: ship the firewall.\n",
	"home/.ssh/id_rsa":       "-----BEGIN FAKE KEY----- (demo) -----END FAKE KEY-----\n",
	"aegis.yaml": `version: 1
home: @HOME@
policy: policy.yaml
servers:
  demo:
    bindings: bindings.yaml
    local: true
    egress:                # names resolve from this table: the demo needs no network
      resolver: static
      hosts: {example.com: [93.184.215.14]}
`,
	"bindings.yaml": `version: 1
tools:
  echo: {tier: read-only}
  status: {tier: read-only}
  read_file:
    tier: data-read
    args: [{pointer: /path, kind: fs.read}]
  fetch:
    tier: data-read
    args: [{pointer: /url, kind: net.connect}]
`,
	"policy.yaml": `version: 1
rules:
  - {id: demo-tools, effect: allow, server: demo, tool: [echo, read_file, fetch, status]}
  - {id: demo-resources, effect: allow, server: demo, method: resources/read}
  - {id: projects, effect: allow, capability: fs.read, path_under: "~/projects"}
  - {id: no-ssh, effect: deny, reason: "SSH keys are off limits", capability: [fs.read, fs.write], path_under: "~/.ssh"}
  - {id: public-web, effect: allow, capability: net.connect, scheme: https, host: "class:public"}
  - {id: no-metadata, effect: deny, reason: "cloud metadata is off limits", capability: net.connect, host: ["class:metadata", "class:link-local", "class:loopback", "class:private"]}
`,
	"looser.yaml": `version: 1
rules:
  - {id: demo-tools, effect: allow, server: demo, tool: "*"}
  - {id: anything, effect: allow, capability: [fs.read, net.connect]}
`,
}

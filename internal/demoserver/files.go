package demoserver

// Files are the files of `aegis demo`, by path in its directory: a home
// with a project and a (fake) SSH key, the configuration (with @HOME@ for
// the home's path), a bindings file for the demo server, a policy (with
// @WIKI_PORT@ for the port of the demo's intranet wiki on loopback), and a
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
      admit: [{hosts: [127.0.0.1], classes: [loopback]}]   # the demo's own web servers
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
  get:
    tier: data-read
    args: [{pointer: /url, kind: net.connect}]
`,
	"policy.yaml": `version: 1
rules:
  - {id: demo-tools, effect: allow, server: demo, tool: [echo, read_file, fetch, status, get]}
  - {id: demo-resources, effect: allow, server: demo, method: resources/read}
  - {id: demo-own, effect: allow, server: demo, method: egress/connect}
  - {id: projects, effect: allow, capability: fs.read, path_under: "~/projects"}
  - {id: no-ssh, effect: deny, reason: "SSH keys are off limits", capability: [fs.read, fs.write], path_under: "~/.ssh"}
  - {id: public-web, effect: allow, capability: net.connect, scheme: https, host: "class:public"}
  - {id: wiki, effect: allow, capability: net.connect, host: 127.0.0.1, port: @WIKI_PORT@}
  - {id: no-metadata, effect: deny, reason: "cloud metadata is off limits", capability: net.connect, host: ["class:metadata", "class:link-local", "class:private"]}
`,
	"looser.yaml": `version: 1
rules:
  - {id: demo-tools, effect: allow, server: demo, tool: "*"}
  - {id: demo-own, effect: allow, server: demo, method: egress/connect}
  - {id: anything, effect: allow, capability: [fs.read, net.connect]}
`,
}

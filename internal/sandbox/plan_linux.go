package sandbox

// A plan is what the init applies, sent to it as JSON over an inherited
// memfd: every path resolved and every decision made outside, so that the
// init only carries it out.
type plan struct {
	Path string   `json:"path"` // the server's program, resolved
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`

	// Namespaces says the init runs in new user, mount and network
	// namespaces: it mounts, and brings up lo.
	Namespaces bool `json:"namespaces"`
	PrivateTmp bool `json:"private_tmp"`
	// TmpFiles are written to the private /tmp once it is mounted.
	TmpFiles []tmpFile `json:"tmp_files,omitempty"`
	Masked   []string  `json:"masked,omitempty"`
	ReadOnly []string  `json:"read_only,omitempty"`

	// Landlock is the ABI version to use; 0 means none.
	Landlock int      `json:"landlock"`
	Read     []string `json:"read,omitempty"`
	List     []string `json:"list,omitempty"`
	Write    []string `json:"write,omitempty"`
	Devices  []string `json:"devices,omitempty"`

	// ProxyPort is where the init listens for the proxy, on 127.0.0.1
	// in the namespace; 0 means no network.
	ProxyPort int `json:"proxy_port,omitempty"`
	// Required makes any failure fatal; else it is reported.
	Required bool `json:"required"`
}

// status is the init's one message back, sent just before it execve's the
// server, with the proxy's listening socket attached.
type status struct {
	Err     string    `json:"err,omitempty"`
	Missing []Missing `json:"missing,omitempty"`
}

// The init's inherited descriptors (exec.Cmd.ExtraFiles).
const (
	planFD   = 3
	statusFD = 4
)

// initArg0 is the argv of the init: aegis run with this argv[0] and no
// argument is the sandbox's init. No command of aegis is spelled so.
const initArg0 = "aegis-sandbox-init"

// maxPlanBytes bounds the plan the init reads.
const maxPlanBytes = 4 << 20

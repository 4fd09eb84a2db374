package chain

import "fmt"

// CheckServerName checks that name can name a server's chain: the lanes
// of that chain are directories named for it (SERVER, SERVER@2, …), as
// are the server's pins, envelopes and logs in aegis's state directory.
// So it is a short plain file name: 1 to 64 letters, digits, '.', '_' or
// '-', not starting with '.'. It holds no '@', which leaves '@' to the
// lane number, so that no lane is another server's chain.
func CheckServerName(name string) error {
	ok := name != "" && len(name) <= 64 && name[0] != '.'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("server name %q: want 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'", name)
	}
	return nil
}

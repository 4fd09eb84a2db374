// Package archtest holds the architecture tests of aegis: every package has
// a doc comment, imports point down the layers of DESIGN.md, the MCP SDK
// stops at the protocol packages, and the pure packages do no I/O. It has
// no code of its own.
package archtest

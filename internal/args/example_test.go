package args_test

import (
	"fmt"

	"github.com/aegis-mcp/aegis/internal/args"
)

func Example() {
	var d args.Doc
	err := d.Decode([]byte(`{"paths":["/etc/passwd","~/notes.txt"],"head":10}`), nil)
	if err != nil {
		fmt.Println("deny:", err)
		return
	}
	p, err := args.ParsePointer("/paths/*")
	if err != nil {
		panic(err)
	}
	p.Select(d.Root(), func(v args.Value, at args.Loc) {
		fmt.Printf("%s = %q\n", at, v.Str())
	})
	fmt.Printf("%s\n", d.Root().AppendJSON(nil))
	// Output:
	// /paths/0 = "/etc/passwd"
	// /paths/1 = "~/notes.txt"
	// {"head":10,"paths":["/etc/passwd","~/notes.txt"]}
}

func ExampleDoc_Decode_duplicateKey() {
	var d args.Doc
	err := d.Decode([]byte(`{"path":"/tmp/x","\u0070ath":"/home/a/.ssh/id_rsa"}`), nil)
	fmt.Println(err)
	// Output:
	// args: invalid JSON at byte 17: duplicate object key, or one differing only in case (first at byte 1)
}

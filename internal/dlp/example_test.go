package dlp_test

import (
	"fmt"

	"github.com/aegis-mcp/aegis/internal/dlp"
)

func ExampleScan() {
	text := "charge 4111 1111 1111 1111, then connect to postgres://app:Zx9pQ2w7@db:5432/shop"
	fs := dlp.Scan(text, nil)
	for _, f := range fs {
		fmt.Println(f.Kind, f.Start, f.End) // never text[f.Start:f.End]
	}
	fmt.Println(dlp.Redact(text, fs))
	// Output:
	// card 7 26
	// conn.password 59 67
	// charge [REDACTED:card], then connect to postgres://app:[REDACTED:conn.password]@db:5432/shop
}

func ExampleParseActions() {
	acts, err := dlp.ParseActions(map[string]string{"default": "redact", "private_key": "deny", "card": "ask"})
	if err != nil {
		panic(err)
	}
	act, _ := acts.Decide([]dlp.Finding{{Kind: dlp.Card}, {Kind: dlp.JWT}})
	fmt.Println(act)
	_, err = dlp.ParseActions(map[string]string{"gihub.token": "deny"})
	fmt.Println(err != nil)
	// Output:
	// ask
	// true
}

func ExampleRedactJSON() {
	acts := dlp.Actions{Default: dlp.ActionRedact}
	out, found, err := dlp.RedactJSON([]byte(`{"query":"select 1","dsn":"postgres://app:Zx9pQ2w7@db/shop","pan":5555555555554444}`), nil, acts.Redacts)
	if err != nil {
		panic(err)
	}
	fmt.Println(found)
	fmt.Println(string(out))
	// Output:
	// [{conn.password /dsn false false} {card /pan false false}]
	// {"query":"select 1","dsn":"postgres://app:[REDACTED:conn.password]@db/shop","pan":"[REDACTED:card]"}
}

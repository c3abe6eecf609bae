module github.com/tqmon/tqmon

go 1.26

require (
	github.com/antlr4-go/antlr/v4 v4.13.1
	github.com/spf13/cobra v1.10.2
)

require (
	github.com/cockroachdb/datadriven v1.0.3 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/exp v0.0.0-20240506185415-9bf2ced13842 // indirect
)

package source

import "testing"

func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cands []string
		want  string
	}{
		{"Processer", []string{"Process", "Processor", "Mailbox"}, " (did you mean Processor?)"},
		{"sate", []string{"State", "Process"}, " (did you mean State?)"},
		{"q", []string{"p", "r"}, " (known: p, r)"},
		{"Nobody", []string{"Process", "Mailbox"}, " (known: Mailbox, Process)"},
		{"x", nil, ""},
	} {
		if got := Suggest(tt.name, tt.cands); got != tt.want {
			t.Errorf("Suggest(%q, %q) = %q, want %q", tt.name, tt.cands, got, tt.want)
		}
	}
}

package tquel

import (
	"strings"
	"testing"
)

func BenchmarkZZ(b *testing.B) {
	ins := []string{
		"0000000000M00000000000000000000000000000000000000000000000000000",
		"000000000000000000000000S0000000",
		"retrieve(0=00000000%00000000",
		"retrieve(%A,,.%A%,0 A)where A.%And 0 0",
		strings.Repeat("0", 3000),
		strings.Repeat("0", 60) + "M" + strings.Repeat("0", 3000),
	}
	for _, in := range ins {
		b.Run("", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Parse("x", in)
			}
		})
	}
}

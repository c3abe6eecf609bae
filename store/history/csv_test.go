package history

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// csvRecords reads data with encoding/csv as ReadCSV once did, and with
// csvReader, describing each record or error.
// A small buffer (4 bytes, read one byte at a time) moves and grows it
// while records are read.
func csvRecords(data []byte, small bool) (std, ours []string) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			std = append(std, fmt.Sprintf("error %d:%d: %v", pe.Line, pe.Column, pe.Err))
			continue
		}
		s := fmt.Sprintf("%q", rec)
		for i := range rec {
			l, c := r.FieldPos(i)
			s += fmt.Sprintf(" %d:%d", l, c)
		}
		std = append(std, s)
	}
	c := newCSVReader(bytes.NewReader(data))
	if small {
		c = newCSVReader(iotest.OneByteReader(bytes.NewReader(data)))
		c.buf = make([]byte, 4)
	}
	for {
		err := c.read()
		if err == io.EOF {
			break
		}
		var ce *csvError
		if errors.As(err, &ce) {
			ours = append(ours, fmt.Sprintf("error %d:%d: %v", ce.line, ce.col, ce.err))
			continue
		}
		if err != nil {
			ours = append(ours, "error "+err.Error())
			break
		}
		rec := make([]string, len(c.fields))
		for i, f := range c.fields {
			rec[i] = string(f)
		}
		s := fmt.Sprintf("%q", rec)
		for _, p := range c.positions {
			s += fmt.Sprintf(" %d:%d", p.line, p.col)
		}
		ours = append(ours, s)
	}
	return std, ours
}

// TestCSVReaderAgreesWithEncodingCSV: csvReader reads the same records,
// fields, positions and errors as encoding/csv, on hand-picked and random
// texts of quotes, commas, line breaks and carriage returns.
func TestCSVReaderAgreesWithEncodingCSV(t *testing.T) {
	texts := []string{
		"", "\n", "a", "a\n", "a,b\r\nc\r", "\"a\nb\",c\n", "\"a\"\"b\",\"\"\n", "a\"b\n",
		"\"a\"x\n", "\"abc", "\"abc\n", "\"a\r\nb\"\r\n", ",,\n", "\r\n\r\n", "x\r", "\"\"",
		"a,\"b\nc\nd\",e\nf\n", "é,\"ü\"x\n",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab,\"\n\r é")
	for range 5000 {
		n := rng.IntN(24)
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	// Long texts, of records short and long, read through the buffer as
	// it grows from csvBufFirst to csvBufRead and past it.
	for _, rec := range []int{20, 3000, 100_000} {
		var b strings.Builder
		for i := 0; b.Len() < 300_000; i++ {
			fmt.Fprintf(&b, "%d,\"%s\n\",%s\n", i, strings.Repeat("q", rng.IntN(rec)), strings.Repeat("z", rng.IntN(rec)))
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		for _, small := range []bool{false, true} {
			std, ours := csvRecords([]byte(text), small)
			if strings.Join(std, "\n") != strings.Join(ours, "\n") {
				t.Fatalf("%q (small buffer %v):\nencoding/csv:\n%s\ncsvReader:\n%s", text, small, strings.Join(std, "\n"), strings.Join(ours, "\n"))
			}
		}
	}
}

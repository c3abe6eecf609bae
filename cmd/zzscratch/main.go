package main
import ("fmt";"bytes";"encoding/csv")
func main(){ for _, s := range []string{"a,b\n\"x,y\n", "a,b\n\"x\"y,z\n", "a,b\nx,\"y\n\nz", "a,b\r\nx\"y,z\r\n"} {
 r := csv.NewReader(bytes.NewReader([]byte(s))); r.FieldsPerRecord=-1
 for { rec, err := r.Read(); if err != nil { fmt.Printf("%q %#v\n", rec, err); if pe, ok := err.(*csv.ParseError); ok {fmt.Println(pe.StartLine, pe.Line, pe.Column)}; if err.Error()=="EOF" {break}; continue }; fmt.Println(rec) } } }

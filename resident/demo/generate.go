package demo

// The demo subject's sensors are generated from os.sdl, the relations of the
// paper's example system; TestGeneratedSensorsCurrent (sensor/gogen) checks
// the committed file is what the generator makes today.
//go:generate go run ../../cmd/tqmon sensors compile os.sdl --go-out ossensors --go-package ossensors

// Package sensor is the sensor-description compiler: it turns a parsed
// sensor-description file (grammar/sdl) into a catalog of entity types and
// primitive relations (algebra.Catalog), checking it on the way, and — as the
// sensor installation step grows — generates the sensors themselves.
package sensor

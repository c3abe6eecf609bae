package check

import "time"

var timeParseDuration = time.ParseDuration

package readiness

// judge turns probe outcomes into eligibility, with hysteresis: a node
// starts not eligible, becomes eligible after successThreshold successes
// in a row and stops after failureThreshold failures in a row. An API
// server that flaps faster than either threshold stays where it was: one
// that lost eligibility needs successThreshold uninterrupted successes to
// get it back, so a flapping one stays out.
type judge struct {
	failureThreshold, successThreshold int

	eligible            bool
	successes, failures int
}

// observe records one probe and reports whether eligibility changed.
func (j *judge) observe(ok bool) (changed bool) {
	if ok {
		j.successes, j.failures = j.successes+1, 0
		if !j.eligible && j.successes >= j.successThreshold {
			j.eligible = true
			return true
		}
		return false
	}
	j.successes, j.failures = 0, j.failures+1
	if j.eligible && j.failures >= j.failureThreshold {
		j.eligible = false
		return true
	}
	return false
}

package front

import "github.com/antlr4-go/antlr/v4"

// Recovery adapts ANTLR's default error recovery to keywords usable as
// names: where recovering inline (deleting the current token, or
// conjuring a missing one) would misread a keyword, the parser leaves the
// rule instead and resynchronises on what may follow it. Otherwise a stray
// token before a statement keyword would turn that keyword into a name and
// lose track of the statements.
type Recovery struct {
	// NoInline reports whether inline recovery at the current token would
	// misread a keyword (see KeywordAsNameAhead).
	NoInline func(p antlr.Parser) bool
	// Insert still allows conjuring a missing token where NoInline holds:
	// only deleting the current token is refused.
	Insert bool
}

// KeywordAsNameAhead reports whether single-token deletion would read the
// token after the current one as a keyword standing for a name: it is one
// of nameKeywords and a name (token type ident) is expected.
func KeywordAsNameAhead(p antlr.Parser, nameKeywords TokenSet, ident int) bool {
	if !nameKeywords[p.GetTokenStream().LA(2)] {
		return false
	}
	return hasToken(p.GetExpectedTokens(), ident)
}

func hasToken(set *antlr.IntervalSet, tt int) bool {
	if set == nil {
		return false
	}
	for _, iv := range set.GetIntervals() {
		if tt >= iv.Start && tt < iv.Stop {
			return true
		}
	}
	return false
}

// errorStrategy is ANTLR's default recovery, restrained by a Recovery.
type errorStrategy struct {
	*antlr.DefaultErrorStrategy
	r Recovery
}

func newErrorStrategy(r Recovery) *errorStrategy {
	return &errorStrategy{DefaultErrorStrategy: antlr.NewDefaultErrorStrategy(), r: r}
}

func (s *errorStrategy) Sync(p antlr.Parser) {
	if s.InErrorRecoveryMode(p) {
		return
	}
	within, ok := p.(interface {
		GetExpectedTokensWithinCurrentRule() *antlr.IntervalSet
	})
	if !ok {
		s.DefaultErrorStrategy.Sync(p)
		return
	}
	next := within.GetExpectedTokensWithinCurrentRule()
	if hasToken(next, antlr.TokenEpsilon) || hasToken(next, p.GetTokenStream().LA(1)) {
		return
	}
	if s.r.NoInline(p) {
		p.SetError(antlr.NewInputMisMatchException(p))
		return
	}
	s.DefaultErrorStrategy.Sync(p)
}

func (s *errorStrategy) RecoverInline(p antlr.Parser) antlr.Token {
	if !s.r.NoInline(p) {
		return s.DefaultErrorStrategy.RecoverInline(p)
	}
	if s.r.Insert && s.SingleTokenInsertion(p) {
		return s.GetMissingSymbol(p)
	}
	p.SetError(antlr.NewInputMisMatchException(p))
	return nil
}

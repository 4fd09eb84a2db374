package dlp

// atDigit reads the run of digits and single separators starting at i, reports the card
// number in it if there is one, and returns the end of the run, so that each digit is
// read once.
//
// A card number is 13 to 19 digits, either contiguous or in groups split by one space or
// one dash throughout (4-4-4-4, 4-4-4-4-3, 4-6-5, 4-6-4 and the like: a first group of
// four, middle groups of four or six, a last group of one to six), with the prefix and
// length of a known network and a valid Luhn check digit. It is the whole run, or the
// run without a last group of two or three digits (an expiry month or a CVV), or the
// first group of the run when that group alone has 13 to 19 digits. A run touching a
// letter or an underscore, following a '+' (phone numbers) or a '-' (negative numbers),
// or touching a '.' or ',' and another digit (decimal numbers) holds no card number.
func (sc *scanner) atDigit(i int) int {
	s := sc.s
	if !cardEdge(s, i-1, -1) {
		return run(s, i, cDigit) // inside a word or a number: hex, base64, 3.14
	}
	const maxGroups = 8
	var ends [maxGroups]int // end of each group
	groups := 0
	var sep byte
	j := i
	for {
		j = run(s, j, cDigit)
		if groups < maxGroups {
			ends[groups] = j
		}
		groups++
		if j+1 < len(s) && (s[j] == ' ' || s[j] == '-') && (sep == 0 || sep == s[j]) && is(s[j+1], cDigit) {
			sep = s[j]
			j++
			continue
		}
		break
	}
	if j-i < 13 {
		return j // a card number has thirteen digits, and every one is in s[i:j]
	}
	switch {
	case ends[0]-i >= 13:
		// A contiguous number, alone or followed by other numbers.
		if groups == 1 && !cardEdge(s, j, +1) {
			return j
		}
		sc.card(i, ends[0], 1, ends[:1])
	case groups > maxGroups:
	case cardEdge(s, j, +1) && sc.card(i, j, groups, ends[:groups]):
	case groups > 2:
		if tail := ends[groups-1] - ends[groups-2] - 1; tail == 2 || tail == 3 {
			sc.card(i, ends[groups-2], groups-1, ends[:groups-1])
		}
	}
	return j
}

// card reports s[i:end] as a card number if its groups (ending at ends) are laid out as
// card numbers are and its digits are one.
func (sc *scanner) card(i, end, groups int, ends []int) bool {
	s := sc.s
	if groups > 1 {
		if ends[0]-i != 4 {
			return false
		}
		for g := 1; g < groups-1; g++ {
			if n := ends[g] - ends[g-1] - 1; n != 4 && n != 6 {
				return false
			}
		}
		if n := ends[groups-1] - ends[groups-2] - 1; n < 1 || n > 6 {
			return false
		}
	}
	var digits [19]byte
	n := 0
	for k := i; k < end; k++ {
		if is(s[k], cDigit) {
			if n == len(digits) {
				return false
			}
			digits[n] = s[k] - '0'
			n++
		}
	}
	if n < 13 || !issuer(digits[:n]) || !luhn(digits[:n]) {
		return false
	}
	sc.add(Card, i, end)
	return true
}

// cardEdge reports whether the byte at k, beside a digit run, leaves the run a number
// of its own. dir is the side: -1 before the run, +1 after.
func cardEdge(s string, k, dir int) bool {
	if k < 0 || k >= len(s) {
		return true
	}
	c := s[k]
	switch {
	case is(c, cAlnum|cUnderscore), (c == '+' || c == '-') && dir < 0:
		return false // a word, a phone number, a negative number
	case c == '.' || c == ',':
		// 3.14159265358979323 or 1,4111111111111111: part of a decimal number.
		o := k + dir
		return o < 0 || o >= len(s) || !is(s[o], cDigit)
	}
	return true
}

// issuer reports whether d starts with the prefix of a card network that issues numbers
// of its length: Visa, Mastercard, American Express, Discover, JCB, Diners Club,
// UnionPay, Maestro and Mir.
func issuer(d []byte) bool {
	n := len(d)
	p2 := int(d[0])*10 + int(d[1])
	p3 := p2*10 + int(d[2])
	p4 := p3*10 + int(d[3])
	p6 := p4*100 + int(d[4])*10 + int(d[5])
	switch {
	case d[0] == 4: // Visa; its 13-digit numbers are retired and read like EAN-13 codes
		return n == 16 || n == 19
	case 51 <= p2 && p2 <= 55, 2221 <= p4 && p4 <= 2720: // Mastercard
		return n == 16
	case p2 == 34 || p2 == 37: // American Express
		return n == 15
	case p4 == 6011, 644 <= p3 && p3 <= 649, p2 == 65, 622126 <= p6 && p6 <= 622925: // Discover
		return n >= 16
	case 3528 <= p4 && p4 <= 3589: // JCB
		return n >= 16
	case 300 <= p3 && p3 <= 305, p4 == 3095, p2 == 36, p2 == 38, p2 == 39: // Diners Club
		return n >= 14
	case p2 == 62: // UnionPay
		return n >= 16
	case p4 == 5018, p4 == 5020, p4 == 5038, p4 == 5893, p4 == 6304, p4 == 6759, 6761 <= p4 && p4 <= 6763: // Maestro
		return true
	case 2200 <= p4 && p4 <= 2204: // Mir
		return n >= 16
	}
	return false
}

// luhn reports whether the last digit of d is its Luhn check digit.
func luhn(d []byte) bool {
	sum := 0
	for k := len(d) - 1; k >= 0; k-- {
		v := int(d[k])
		if (len(d)-1-k)%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

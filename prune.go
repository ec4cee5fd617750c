package slotted

import ()

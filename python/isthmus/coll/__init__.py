"""The WAN-aware collectives' selector from the outside: why it chooses what it does
(`isthmus coll explain`) and measured choices (`isthmus coll tune`)."""

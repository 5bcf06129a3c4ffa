
lamplighters-ledgerThe Lamplighter's Ledger°Someone stole the ledger in which the district's fixer recorded every bribe he paid to the police. Whoever holds it can ruin the inspector, free the pawnbroker from her debts, or sell it to the newspapers. The story should bring the ledger into the open and force each character to choose."TFog rolls up from the river. Somewhere a watchman's rattle sounds twice, then stops.*gasworks-lane08BÇNarrow lanes between the gasworks and the river; gaslight, fog, barges, and a police station that looks the other way for a price.J
gasworks-laneGasworks Lane_A lane of soot-black brick under the gasholders, where the lamps are lit first and go out last.Jy
pawnshopVarga's pawnshop[A cramped shop of clocks, coats and wedding rings, with a back room nobody is invited into.J|
police-stationthe Dock Street police stationJA front desk, a cold cell, and an inspector's office with a locked drawer.Jt
river-stepsthe river stepsTSlimy stone steps down to the water, where the bargemen tie up and ask no questions.R
gasworks-lanepawnshopR
gasworks-laneriver-stepsR
pawnshoppolice-stationR
police-stationriver-stepsZ«
ada	Ada Finchthe lamplighter"tA lamplighter of twenty-six who knows every lane by its shadows. Quick, proud, owes nobody, and hates being lied to.*)short sentences, dry humour, street slang2gasworks-lane:8find out who dropped the oilcloth packet under lamp nineR'a young woman with a lamplighter's poleZcoyleZtomZvargaZö
coyleInspector Coylethe inspector"fA heavy, patient police inspector who has taken money for years and is afraid it is about to come out.*#polite, slow, every question a trap2police-station:*get the ledger back before anyone reads itR!a heavy man in a police greatcoatZvargaZñ
tom	Tom Reddythe boy"bA pickpocket of fifteen who lifted a packet without knowing what was in it and now cannot sell it.*!fast, cheeky, changes the subject2gasworks-lane:3sell what he stole for enough to leave the districtRa skinny boy with quick handsZadaZcoyleZvargaZì
varga	Mrs Vargathe pawnbroker"bA widowed pawnbroker who pays the fixer every month and keeps her own small book of who owes what.*&warm on the surface, exact about money2police-station:/learn whether her name is in the missing ledgerRa stout widow in blackZcoyleZtomb}
	lamp-nineXLast night I saw a boy drop an oilcloth packet under lamp nine and run toward the river.ada"direct_experiencebÅ
drawer]The ledger was taken from the fixer's coat while he sat in my station; if it is read, I hang.coyle"direct_experiencebâ
packetgThe packet I lifted holds a small black book full of names and sums; I hid it in a barge's rope locker.tom"direct_experiencebi
debtsFThe fixer has written down every payment I made to him, with the date.varga"direct_experiencebx
districtBEveryone in the district pays the fixer, and the police look away.adacoyletomvarga"common_knowledge
"""Layer 3, trained: a small public-domain corpus for bands over inputs.

Thirty-six sentences from the opening chapters of four public-domain novels
(authors dead for over a century; texts as in the Project Gutenberg editions,
transcribed here, spelling modernized nowhere): Jane Austen, *Pride and
Prejudice* (1813), ch. 1; Herman Melville, *Moby-Dick* (1851), ch. 1; Lewis
Carroll, *Alice's Adventures in Wonderland* (1865), ch. 1; Charles Dickens,
*A Tale of Two Cities* (1859), book 1 ch. 1. Each is 10-60 tokens for both
models, short of MiniLM's 512 and SmolLM2's 8192.
"""

SOURCES = {
    "austen": "Jane Austen, Pride and Prejudice (1813), chapter 1",
    "melville": "Herman Melville, Moby-Dick (1851), chapter 1",
    "carroll": "Lewis Carroll, Alice's Adventures in Wonderland (1865), chapter 1",
    "dickens": "Charles Dickens, A Tale of Two Cities (1859), book 1, chapter 1",
}

SENTENCES = (
    # austen
    "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife.",
    "However little known the feelings or views of such a man may be on his first entering "
    "a neighbourhood, this truth is so well fixed in the minds of the surrounding families, "
    "that he is considered the rightful property of some one or other of their daughters.",
    "My dear Mr. Bennet, said his lady to him one day, have you heard that Netherfield Park "
    "is let at last?",
    "Mr. Bennet replied that he had not.",
    "But it is, returned she; for Mrs. Long has just been here, and she told me all about it.",
    "Mr. Bennet made no answer.",
    "Do you not want to know who has taken it? cried his wife impatiently.",
    "You want to tell me, and I have no objection to hearing it.",
    "This was invitation enough.",
    # melville
    "Call me Ishmael.",
    "Some years ago, never mind how long precisely, having little or no money in my purse, "
    "and nothing particular to interest me on shore, I thought I would sail about a little "
    "and see the watery part of the world.",
    "It is a way I have of driving off the spleen and regulating the circulation.",
    "This is my substitute for pistol and ball.",
    "With a philosophical flourish Cato throws himself upon his sword; I quietly take to "
    "the ship.",
    "There is nothing surprising in this.",
    "There now is your insular city of the Manhattoes, belted round by wharves as Indian "
    "isles by coral reefs, commerce surrounds it with her surf.",
    "Circumambulate the city of a dreamy Sabbath afternoon.",
    "What do you see?",
    # carroll
    "Alice was beginning to get very tired of sitting by her sister on the bank, and of "
    "having nothing to do.",
    "Once or twice she had peeped into the book her sister was reading, but it had no "
    "pictures or conversations in it.",
    "And what is the use of a book, thought Alice, without pictures or conversations?",
    "So she was considering in her own mind whether the pleasure of making a daisy-chain "
    "would be worth the trouble of getting up and picking the daisies.",
    "Suddenly a White Rabbit with pink eyes ran close by her.",
    "There was nothing so very remarkable in that.",
    "Down, down, down. Would the fall never come to an end?",
    "I wonder how many miles I've fallen by this time? she said aloud.",
    "Presently she began again.",
    # dickens
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
    "the age of foolishness.",
    "It was the epoch of belief, it was the epoch of incredulity, it was the season of "
    "Light, it was the season of Darkness.",
    "It was the spring of hope, it was the winter of despair.",
    "We had everything before us, we had nothing before us.",
    "We were all going direct to Heaven, we were all going direct the other way.",
    "There were a king with a large jaw and a queen with a plain face, on the throne of "
    "England.",
    "There were a king with a large jaw and a queen with a fair face, on the throne of "
    "France.",
    "It was the year of Our Lord one thousand seven hundred and seventy-five.",
    "France, less favoured on the whole as to matters spiritual than her sister of the "
    "shield and trident, rolled with exceeding smoothness down hill.",
)

"""The labelling step: the page's read, the form's answers and their A/B slots, drafts, a Submit."""

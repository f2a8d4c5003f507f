"""Staff rostering: shifts, timesheets, overtime, holidays, breaks, payroll export, availability, shift swaps and on-call duty."""

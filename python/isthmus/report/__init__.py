"""What results become for a reader: the tables and plots of the docs (render), the
project's targets against the results, and the HTML report of a sweep. All plotting is here."""
